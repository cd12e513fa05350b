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

import threading

from sushy_kubevirt.kube import accounting


def test_counts_per_verb_and_resource():
    acc = accounting.Accounting()
    acc.cache('get', 'virtualmachines')
    acc.cache('get', 'virtualmachines')
    acc.live('get', 'virtualmachines')
    acc.live('patch', 'virtualmachines')
    assert acc.cache_reads() == 2
    assert acc.cache_reads('get', 'virtualmachines') == 2
    assert acc.live_calls() == 2
    assert acc.live_calls('patch') == 1
    assert acc.live_calls(resource='virtualmachineinstances') == 0


def test_render_prometheus_text():
    acc = accounting.Accounting()
    acc.cache('get', 'virtualmachines')
    acc.live('update', 'virtualmachines/start')
    acc.throttled(0.25)
    text = acc.render()
    assert ('sushy_kubevirt_cache_reads_total{verb="get",'
            'resource="virtualmachines"} 1') in text
    assert ('sushy_kubevirt_api_calls_total{verb="update",'
            'resource="virtualmachines/start"} 1') in text
    assert 'sushy_kubevirt_api_throttle_seconds_total 0.25' in text
    assert '# TYPE sushy_kubevirt_api_calls_total counter' in text
    assert text.endswith('\n')


def test_thread_safe():
    acc = accounting.Accounting()

    def work():
        for _ in range(1000):
            acc.live('get', 'virtualmachines')

    threads = [threading.Thread(target=work) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert acc.live_calls('get', 'virtualmachines') == 4000
