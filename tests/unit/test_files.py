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

"""Files other processes read are replaced whole, never seen half written."""

import os
import stat
import threading
import time

import pytest

from sushy_kubevirt import files
from sushy_kubevirt.simulator import kubeconfig

#: Rewrites a racing reader watches (and at most this long).
REWRITES, SECONDS = 2000, 20.0


def _mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def test_replace_writes_the_data_with_its_mode_and_leaves_nothing(tmp_path):
    target = tmp_path / 'kubeconfig'
    target.write_text('old')
    os.chmod(target, 0o644)
    assert files.replace(target, 'new', 0o600) == str(target)
    assert (target.read_text(), _mode(target)) == ('new', 0o600)
    assert files.replace(target, b'\x00bytes') == str(target)
    assert (target.read_bytes(), _mode(target)) == (b'\x00bytes', 0o644)
    assert os.listdir(tmp_path) == ['kubeconfig']


def test_a_failed_write_keeps_the_old_file(tmp_path):
    target = tmp_path / 'config'
    target.write_text('old')
    with pytest.raises(TypeError):
        files.replace(target, 42)
    assert target.read_text() == 'old'
    assert os.listdir(tmp_path) == ['config']


def _race(path, write):
    """Reads of ``path`` while ``write(i)`` rewrites it: those not whole."""
    done = threading.Event()
    seen = []

    def read():
        while not done.is_set():
            with open(path) as stream:
                seen.append(stream.read())
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    deadline = time.monotonic() + SECONDS
    try:
        for number in range(REWRITES):
            write(number)
            if time.monotonic() > deadline:
                break
    finally:
        done.set()
        reader.join(SECONDS)
    return seen


def test_a_reader_never_sees_a_kubeconfig_half_written(tmp_path):
    path = str(tmp_path / 'kubeconfig')

    def write(number):
        kubeconfig.write(path, 'https://127.0.0.1:%d' % (6443 + number % 2),
                         'x' * 4096)
    write(0)
    seen = _race(path, write)
    whole = {kubeconfig.render('https://127.0.0.1:%d' % port, 'x' * 4096)
             for port in (6443, 6444)}
    assert seen and set(seen) <= whole
    assert _mode(path) == 0o600
