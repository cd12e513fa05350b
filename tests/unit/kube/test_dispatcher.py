# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""The shared dispatcher: one thread, queue order, failing handlers."""

import threading

from sushy_kubevirt.kube import dispatcher as dispatcher_mod


def test_one_thread_delivers_in_queue_order():
    seen, done = [], threading.Event()

    def record(kind, obj):
        seen.append((threading.current_thread().name, kind, obj))
        if obj == 'last':
            done.set()

    def broken(kind, obj):
        raise RuntimeError('handler bug')

    d = dispatcher_mod.Dispatcher('dispatcher test')
    d.put((record, broken), 'ADDED', 'ns-a/x')
    d.put((broken, record), 'ADDED', 'ns-b/y')
    d.put((), 'ADDED', 'nobody')
    d.put((record,), 'MODIFIED', 'ns-a/x')
    d.put((record,), 'DELETED', 'last')
    d.start()
    assert done.wait(10)
    d.stop()
    assert not d._thread.is_alive()
    assert seen == [('dispatcher test', 'ADDED', 'ns-a/x'),
                    ('dispatcher test', 'ADDED', 'ns-b/y'),
                    ('dispatcher test', 'MODIFIED', 'ns-a/x'),
                    ('dispatcher test', 'DELETED', 'last')]


def test_stop_drops_what_is_queued():
    seen, entered, release = [], threading.Event(), threading.Event()

    def slow(kind, obj):
        seen.append(obj)
        entered.set()
        release.wait(10)

    d = dispatcher_mod.Dispatcher()
    d.start()
    d.put((slow,), 'ADDED', 'first')
    d.put((slow,), 'ADDED', 'second')
    assert entered.wait(10)
    stopper = threading.Thread(target=d.stop)
    stopper.start()
    assert d._stopped.wait(10)
    release.set()
    stopper.join(10)
    assert not d._thread.is_alive()
    assert seen == ['first']
