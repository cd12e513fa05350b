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


"""Which gunicorn worker a process boots, from the stack."""

from gunicorn.workers import base as workers

from sushy_kubevirt import boot


class _Worker(workers.Worker):

    def load_wsgi(self):
        return boot._worker()


def _spawn(worker):
    # As Arbiter.spawn_worker: the new worker is a local named ``worker``.
    return boot._worker()


def test_the_worker_loading_the_application_is_found():
    worker = object.__new__(_Worker)
    assert worker.load_wsgi() is worker


def test_the_worker_being_forked_is_found():
    worker = object.__new__(_Worker)
    assert _spawn(worker) is worker


def test_no_worker_outside_gunicorn():
    assert boot._worker() is None
