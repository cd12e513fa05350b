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

"""The docs' benchmark tables come from the history file at build time."""

import json
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Sphinx comes with the docs environment (tox -e docs).
pytest.importorskip('sphinx')
EXT = ROOT / 'doc' / 'source' / '_ext'
CONF = '''
import sys
sys.path.insert(0, %r)
extensions = ['bench_history']
bench_history = 'history.jsonl'
'''
PAGE = '''Figures
=======

.. bench-history-table:: quick
   :section: calls

.. bench-history-table:: capacity
'''


def _record(**calls):
    return {'commit': 'abcdef0' + '1' * 33, 'date': '2026-12-03T00:00:00Z',
            'dirty': False, 'machine': {'nproc': 2, 'cpu': 'X',
                                        'python': '3.11.7'},
            'ratios': {}, 'calls': calls, 'figures': {}}


def _build(tmp_path, records, page=PAGE):
    source = tmp_path / 'src'
    source.mkdir()
    (source / 'conf.py').write_text(CONF % str(EXT))
    (source / 'index.rst').write_text(page)
    (source / 'history.jsonl').write_text(
        ''.join(json.dumps(r) + '\n' for r in records))
    done = subprocess.run(
        [sys.executable, '-m', 'sphinx', '-q', '-W', '-E', '-b', 'text',
         str(source), str(tmp_path / 'out')], capture_output=True,
        text=True, timeout=120)
    return done, (tmp_path / 'out' / 'index.txt')


def test_the_newest_record_of_each_kind(tmp_path):
    capacity = dict(_record(), kind='capacity', figures={
        'vms': 10000, 'kubevirt 1w closed req/s': 50.5,
        'fake 1w closed req/s': 71.4, 'kubevirt/fake 1w closed req/s': 0.71,
        'kubevirt 1w open req/s': None, 'fake 1w open req/s': 24.9})
    done, out = _build(tmp_path, [
        _record(**{'warm poll': 0.0, 'live poll': 23.0}),
        _record(**{'warm poll': 0.0, 'live poll': 25.0}),
        capacity])
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert re.search(r'poll[\s|]+0[\s|]+25\b', text), text
    assert not re.search(r'\b23\b', text)
    assert 'commit abcdef0' in text and '10,000 VMs' in text
    assert re.search(r'1[\s|]+closed[\s|]+50\.5[\s|]+71\.4[\s|]+0\.71',
                     text), text
    assert re.search(r'1[\s|]+open[\s|]+-[\s|]+24\.9', text), text


def test_the_fair_capacity_table_shows_cpu_per_request(tmp_path):
    old = dict(_record(), kind='capacity', figures={
        'kubevirt 1w closed req/s': 50.5})
    fair = dict(_record(), kind='capacity-fair', figures={
        'vms': 10000, 'kubevirt 2w open req/s': 240.0,
        'fake 2w open req/s': 80.0, 'kubevirt/fake 2w open req/s': 3.0,
        'kubevirt 2w open CPU ms/request': 1.2,
        'fake 2w open CPU ms/request': 4.1})
    done, out = _build(tmp_path, [fair, old], page=(
        'Fair\n====\n\n.. bench-history-table:: capacity-fair\n'))
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert 'Newest capacity-fair record' in text
    assert re.search(r'2[\s|]+open[\s|]+240[\s|]+80[\s|]+3[\s|].*'
                     r'1\.2 / 4\.1', text), text
    assert '50.5' not in text


def test_the_scale_table_lists_each_caches_and_size(tmp_path):
    figures = {}
    for caches, vms, sync in (('cluster', 1000, 0.3),
                              ('namespaces', 100000, 37.9),
                              ('namespaces', 1000, 0.2)):
        prefix = '%s %d ' % (caches, vms)
        figures.update({prefix + 'sync s': sync, prefix + 'KB/VM': 16.4,
                        prefix + 'peak/steady RSS': 1.02,
                        prefix + 'GET p50 ms': 2.6})
    done, out = _build(tmp_path, [dict(_record(), kind='scale',
                                       figures=figures)],
                       page='Scale\n=====\n\n'
                       '.. bench-history-table:: scale\n')
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    rows = re.findall(r'([\d,]+)[\s|]+(namespaces|cluster)[\s|]+([\d.]+)',
                      text)
    assert rows == [('1,000', 'namespaces', '0.2'),
                    ('100,000', 'namespaces', '37.9'),
                    ('1,000', 'cluster', '0.3')], text


def test_the_fleet_tables(tmp_path):
    fleet = dict(_record(steps=2, poll=0), kind='fleet',
                 minimum={'steps': 2, 'poll': 0}, figures={
                     'vms': 1000, 'reads requests': 60000,
                     'reads ours rps': 0, 'reads live rps': 1000.0,
                     'total ours rps': 1.5, 'total live rps': 1001.5,
                     'all clients API req/s': 42.1,
                     'get_system requests': 48000, 'get_system p50 ms': 3.1,
                     'get_system p99 ms': 20.5, 'etcd CPU s': 12.5,
                     'wave insert to all On s': [31.2, 40.0]})
    page = 'Fleet\n=====\n\n' + ''.join(
        '.. bench-history-table:: fleet\n   :section: %s\n\n' % section
        for section in ('api', 'kinds', 'steps', 'cpu'))
    done, out = _build(tmp_path, [fleet], page=page)
    assert done.returncode == 0, done.stderr
    text = out.read_text()
    assert re.search(r'reads[\s|]+60000[\s|]+0[\s|]+1000', text), text
    assert re.search(r'total[\s|]+-[\s|]+1\.5[\s|]+1001\.5', text), text
    assert re.search(r'get_system[\s|]+48000[\s|]+3\.1 / 20\.5', text), text
    assert re.search(r'steps[\s|]+2[\s|]+2', text), text
    assert re.search(r'etcd[\s|]+12\.5', text), text
    assert '31.2, 40' in text


def test_a_missing_kind_fails_the_build(tmp_path):
    done, _ = _build(tmp_path, [_record()])
    assert done.returncode != 0
    assert 'no record of kind capacity' in done.stderr


def test_the_benchmarks_page_copies_no_record_by_hand():
    page = (ROOT / 'doc' / 'source' / 'benchmarks.rst').read_text()
    assert page.count('.. bench-history-table:: quick') == 4
    assert page.count('.. bench-history-table:: capacity\n') == 1
    assert page.count('.. bench-history-table:: capacity-fair\n') == 1
    assert page.count('.. bench-history-table:: scale') == 1
    assert page.count('.. bench-history-table:: fleet') == 4
