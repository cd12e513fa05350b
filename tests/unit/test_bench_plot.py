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

"""The trend plot's x labels: short and thinned."""

from sushy_kubevirt.bench import plot


def test_labels_are_a_short_commit_and_a_date():
    assert plot.labels([{'commit': 'a3ca40e4' + '0' * 32,
                         'date': '2026-12-01T10:21:42Z'}, {}]) == [
        'a3ca40e\n12-01', '?\n']


def test_ticks_are_thinned():
    assert plot.ticks(4) == [0, 1, 2, 3]
    for count in (1, 12, 13, 60, 1000):
        shown = plot.ticks(count)
        assert shown[0] == 0 and len(shown) <= plot.MAX_LABELS
        assert all(0 <= i < count for i in shown)
        assert count <= plot.MAX_LABELS or len(shown) >= plot.MAX_LABELS // 2
