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

"""Hostile input against the emulator + simulator, over real HTTP.

The fixtures are those of tests/functional/vmedia (simulator, in-process
emulator, loopback image server). :class:`Tally` counts every hostile
request: tried, clear 4xx, 5xx, and those that changed state.
"""

import collections

import bcrypt
import pytest
from tests.functional.vmedia.conftest import emulator  # noqa: F401
from tests.functional.vmedia.conftest import images  # noqa: F401
from tests.functional.vmedia.conftest import machine  # noqa: F401
from tests.functional.vmedia.conftest import machines  # noqa: F401
from tests.functional.vmedia.conftest import sim  # noqa: F401


def htpasswd(directory, users, password, cost=4):
    """An htpasswd file in ``directory``, every user with ``password``.

    Hashed once, at a bcrypt ``cost`` cheap enough for tests.
    """
    path = directory / 'htpasswd'
    digest = bcrypt.hashpw(password.encode(), bcrypt.gensalt(cost)).decode()
    path.write_text(''.join('%s:%s\n' % (user, digest) for user in users))
    return str(path)


class Tally:
    """Outcome counts of the hostile requests of one module."""

    def __init__(self):
        self.counts = collections.Counter()

    def record(self, answer, changed):
        """Count ``answer``; ``changed``: the request changed state."""
        self.counts['tried'] += 1
        code = answer.status_code
        if 400 <= code < 500 and _message_id(answer):
            self.counts['clear 4xx'] += 1
        elif 400 <= code < 500:
            self.counts['unclear 4xx'] += 1
        elif code >= 500:
            self.counts['5xx'] += 1
        else:
            self.counts['accepted'] += 1
        if changed and code >= 400:
            self.counts['refused yet changed state'] += 1

    def summary(self):
        return ', '.join('%s: %d' % (key, self.counts[key]) for key in (
            'tried', 'clear 4xx', 'unclear 4xx', '5xx', 'accepted',
            'refused yet changed state'))


def _message_id(answer):
    """The Base MessageId (without registry prefix) of an error answer."""
    try:
        info = answer.json()['error']['@Message.ExtendedInfo'][0]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    return info.get('MessageId', '').rpartition('.')[2] or None


message_id = _message_id


@pytest.fixture(scope='module')
def tally():
    counts = Tally()
    yield counts
    print('\nhostile requests: %s' % counts.summary())
