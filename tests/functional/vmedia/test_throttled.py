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

"""InsertMedia while the API server throttles (429): retried, not a 503."""

from tests import backend
from tests.functional.vmedia import conftest

#: Every test injects faults.
pytestmark = backend.simulator_only('faults')


def test_insert_media_retries_throttled_writes(machine, images, sim):
    image = images.add('throttled.iso')
    for method, path in (('POST', 'datavolumes$'),
                         ('PATCH', 'virtualmachines/%s$' % machine.name)):
        sim.faults.status(429, retry_after=0.2, method=method, path=path,
                          times=1)
    sim.request_log.clear()
    answer = machine.insert(image)
    assert answer.status_code == 204, answer.text
    sent = [(e['verb'], e['resource'], e['status'])
            for e in conftest.writes(sim)]
    assert sent == [('create', 'datavolumes', 429),
                    ('create', 'datavolumes', 201),
                    ('patch', 'virtualmachines', 429),
                    ('patch', 'virtualmachines', 200)], sent
    assert machine.media()['Image'] == image
    assert machine.eject().status_code == 204
