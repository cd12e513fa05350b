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

"""A killed test run leaves no emulator behind.

A Python child starts gunicorn (2 workers) through
:class:`harness.Process`, as a test does, and is killed with SIGKILL
(as ``timeout`` kills a pytest): no cleanup of its runs, yet the
emulator's master and workers end.
"""

import os
import signal
import subprocess
import sys

from tests.functional.emulator import harness

#: Seconds the emulator may take to end after its starter is killed
#: (gunicorn's graceful timeout is 5 s).
BOUND = 30
_STARTER = '''
import pathlib, sys
from tests.functional.emulator import harness
tmp = pathlib.Path(sys.argv[2])
process = harness.emulator_process('gunicorn', sys.argv[1], tmp).start()
process.wait_ready()
print(process.proc.pid, flush=True)
sys.stdin.read()
'''


def _group(pgid):
    """Processes of group ``pgid`` that run (zombies are not counted)."""
    found = []
    for entry in os.listdir('/proc'):
        try:
            with open('/proc/%s/stat' % entry) as stat:
                fields = stat.read().rpartition(')')[2].split()
        except (OSError, ValueError):
            continue
        if fields and fields[0] != 'Z' and int(fields[2]) == pgid:
            found.append(int(entry))
    return found


def test_a_killed_test_run_leaves_no_emulator(config_file, tmp_path):
    starter = subprocess.Popen(
        [sys.executable, '-c', _STARTER, config_file, str(tmp_path)],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.dirname(
            os.path.dirname(os.path.abspath(__file__))))))
    try:
        master = int(starter.stdout.readline())
        harness.wait_until(lambda: len(_group(master)) >= 3, 60, 0.2,
                           'gunicorn master and 2 workers')
        starter.send_signal(signal.SIGKILL)
        starter.wait(30)
        harness.wait_until(lambda: not _group(master), BOUND, 0.2,
                           'the emulator ended')
    finally:
        starter.kill()
        starter.wait(30)
