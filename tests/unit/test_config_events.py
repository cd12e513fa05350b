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

"""The SUSHY_EMULATOR_KUBEVIRT_EVENTS_* settings."""

import pytest

from sushy_kubevirt import config

KEY = config.EVENTS_PREFIX


def test_defaults_and_values():
    assert config.load({}).events == config.Events()
    assert config.load({}).events.namespace is None
    events = config.load({KEY + 'NAMESPACE': 'lab',
                          KEY + 'RETRY_ATTEMPTS': 0,
                          KEY + 'RETRY_INTERVAL': 1,
                          KEY + 'ALLOWED_HOSTS': ['10.0.0.0/8'],
                          KEY + 'MAX_SUBSCRIPTIONS': 5,
                          KEY + 'WORKERS': 2}).events
    assert (events.namespace, events.retry_attempts, events.retry_interval,
            events.allowed_hosts, events.max_subscriptions,
            events.workers) == ('lab', 0, 1, ('10.0.0.0/8',), 5, 2)
    assert KEY + 'LEASE_DURATION' in config.known_keys()


@pytest.mark.parametrize('key, value', [
    ('NAMESPACE', ''), ('RETRY_ATTEMPTS', -1), ('RETRY_ATTEMPTS', 1.5),
    ('RETRY_INTERVAL', 0.5),
    ('QUEUE_SIZE', 0), ('BUFFER_SIZE', True), ('TIMEOUT', 0),
    ('LEASE_DURATION', 'long'), ('DENIED_HOSTS', 'a.example'),
    ('RENEW_PERIOD', 8),  # more than half the default duration (15)
    ('MAX_SUBSCRIPTIONS', 0), ('WORKERS', 0), ('WORKERS', 2.0),
    ('SSE_STREAMS_PER_ACCOUNT', 0), ('SSE_SEND_TIMEOUT', 0),
])
def test_a_bad_value_names_its_key(key, value):
    with pytest.raises(config.ConfigError) as exc:
        config.load({KEY + key: value})
    assert KEY + key in str(exc.value)
