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


"""The scale mode measures both kinds of caches and records them."""

import json
import subprocess
import sys

import pytest


@pytest.mark.timeout(180)
def test_large_records_both_caches(tmp_path):
    history = tmp_path / 'history.jsonl'
    done = subprocess.run(
        [sys.executable, '-m', 'sushy_kubevirt.bench', '--large',
         '--scale', '20', '--seconds', '0.5', '--rounds', '1',
         '--parallel', '2', '--no-vmedia',
         '--output', str(tmp_path / 'bench.json'),
         '--history', str(history)],
        capture_output=True, text=True, timeout=170, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    document = json.loads((tmp_path / 'bench.json').read_text())
    assert [(r['vms'], r['scope']) for r in document['scale']] == [
        (20, 'namespaces'), (20, 'cluster')]
    record, = [json.loads(line) for line in history.read_text().splitlines()]
    assert record['kind'] == 'scale'
    for scope in ('namespaces', 'cluster'):
        figures = {k: v for k, v in record['figures'].items()
                   if k.startswith('%s 20 ' % scope)}
        assert set(figures) == {'%s 20 %s' % (scope, name) for name in (
            'sync s', 'KB/VM', 'peak/steady RSS', 'GET p50 ms')}
        assert figures['%s 20 peak/steady RSS' % scope] >= 1.0
    assert 'caches' in done.stdout
