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

"""Child processes that end with the process that started them.

:func:`popen` starts a child with ``PR_SET_PDEATHSIG``: it is sent a
signal when its parent dies, even of a SIGKILL that runs no cleanup.
That signal follows the *thread* that forked the child, not the process:
a child forked from a short-lived thread would be signalled as soon as
that thread ended. So every child is forked by one long-lived thread of
the process, :class:`Spawner`'s.
"""

import ctypes
import os
import queue
import signal
import subprocess
import threading

_PR_SET_PDEATHSIG = 1


class SpawnTimeout(RuntimeError):
    """The spawner thread did not start the process in time."""


def die_with_parent(sig=signal.SIGTERM):
    """In a forked child: have ``sig`` sent when the parent thread ends."""
    ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, int(sig))


class Spawner:
    """One long-lived thread that starts every child process."""

    def __init__(self):
        self.pid = os.getpid()
        self._jobs = queue.Queue()
        threading.Thread(target=self._run, daemon=True,
                         name='child process spawner').start()

    def _run(self):
        while True:
            fn, done, result = self._jobs.get()
            try:
                result.append((True, fn()))
            except BaseException as exc:  # handed to the caller
                result.append((False, exc))
            done.set()

    def call(self, fn, timeout=60.0):
        """``fn()`` on the spawner thread; its result, or its exception.

        :raises SpawnTimeout: it took over ``timeout`` seconds.
        """
        done, result = threading.Event(), []
        self._jobs.put((fn, done, result))
        if not done.wait(timeout):
            raise SpawnTimeout('starting a process took over %.0f s'
                               % timeout)
        ok, value = result[0]
        if not ok:
            raise value
        return value


_SPAWNER = None
_SPAWNER_LOCK = threading.Lock()


def spawner():
    """This process's :class:`Spawner` (started on first use).

    A forked process has a Spawner of its own: its parent's thread is not
    in it.
    """
    global _SPAWNER
    with _SPAWNER_LOCK:
        if _SPAWNER is None or _SPAWNER.pid != os.getpid():
            _SPAWNER = Spawner()
        return _SPAWNER


def popen(argv, sig=signal.SIGTERM, **kwargs):
    """``subprocess.Popen(argv, **kwargs)``, sent ``sig`` if we die."""
    return spawner().call(lambda: subprocess.Popen(
        argv, preexec_fn=lambda: die_with_parent(sig), **kwargs))
