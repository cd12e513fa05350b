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

import pytest

from sushy_kubevirt.kube import stream


def test_lines_split_across_chunks():
    chunks = [b'{"type": "ADD', b'ED", "object": {}}\n\n{"type"',
              b': "BOOKMARK", "object": {}}\n']
    assert [e['type'] for e in stream.iter_events(chunks)] == \
        ['ADDED', 'BOOKMARK']


def test_many_events_in_one_chunk():
    chunk = b''.join(b'{"type": "MODIFIED", "n": %d}\n' % i
                     for i in range(5))
    assert [e['n'] for e in stream.iter_events([chunk])] == list(range(5))


def test_truncated_event_raises():
    with pytest.raises(stream.TruncatedStream):
        list(stream.iter_events([b'{"type": "ADDED"}\n{"type": "MOD']))


def test_blank_tail_is_clean():
    assert list(stream.iter_lines([b'a\n', b'  \n', b'\n'])) == [b'a']


def test_non_object_line_raises():
    with pytest.raises(ValueError):
        list(stream.iter_events([b'[1, 2]\n']))
