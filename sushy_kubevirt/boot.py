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

"""Each serving process starts its watch cache when it boots.

So that no client request pays for the informers' first lists, a process
lists what it serves before it takes traffic (:func:`warm`), waiting at
most ``SUSHY_EMULATOR_KUBEVIRT_BOOT_SYNC_WAIT`` seconds, less if the API
server refuses a list. Past that it serves anyway: ``/healthz`` answers
503 until the lists are in, and reads go live meanwhile.

* ``sushy-emulator`` and ``sushy-kubevirt-emulator``: after the start-up
  checks, before they listen.
* gunicorn: in each worker before its accept loop, never in the master
  (threads do not survive a fork, and a lock one holds at the fork stays
  held in the child). Without ``--preload`` the worker loads the
  application itself, and its fetch of ``main.app`` warms it
  (:func:`app_fetched`); with ``--preload`` the master loads it, and each
  worker forked afterwards warms right after its fork. The worker's
  heartbeat is notified while it waits, and the wait ends when the
  worker is told to stop.
* Another WSGI server: the first request starts the watch cache.
"""

import logging
import os
import sys
import time

from sushy_kubevirt.redfish import base

LOG = logging.getLogger(__name__)

#: Seconds each unsynced informer is awaited between two heartbeats.
STEP = 0.2
#: Marks an Application whose ``main.app`` fetch was seen.
_FETCHED = '_sushy_kubevirt_fetched'
_WORKERS = 'gunicorn.workers.base'


def warm(app, alive=None):
    """Start this process's watch cache now; wait (bounded) for its sync.

    :param alive: called between waits, at least every few seconds; the
        wait ends when it returns False.
    :returns: whether the cache synced; None without a watch cache.
    """
    systems = base.systems_driver(app, 'cluster')
    if systems is None:
        return None
    cluster = systems.cluster
    bound = cluster.settings.boot_sync_wait
    started = time.monotonic()
    cluster.start()
    while True:
        health = cluster.health()
        synced = sum(1 for h in health if h.synced)
        waited = time.monotonic() - started
        if synced == len(health):
            LOG.info('Watch cache synced in %.1f s (%d informers)', waited,
                     synced)
            return True
        if any(h.forbidden for h in health) or waited >= bound or (
                alive is not None and not alive()):
            (LOG.warning if bound else LOG.info)(
                'Serving before the watch cache synced (%d of %d informers '
                'after %.1f s): /healthz answers 503 until it has', synced,
                len(health), waited)
            return False
        cluster.wait_for_sync(STEP)


def _worker():
    """The gunicorn worker this process boots (on the stack), else None."""
    workers = sys.modules.get(_WORKERS)
    frame = sys._getframe(1)
    while workers is not None and frame is not None:
        for name in ('self', 'worker'):
            found = frame.f_locals.get(name)
            if isinstance(found, workers.Worker):
                return found
        frame = frame.f_back
    return None


def _heartbeat(worker):
    def alive():
        worker.notify()
        return worker.alive
    return alive


def _forked(app):
    worker = _worker()
    if worker is not None:
        warm(app, _heartbeat(worker))


def app_fetched(app):
    """A server fetched ``main.app``: warm a gunicorn worker's process.

    In a worker loading the application, now; in the gunicorn master
    (``--preload``), in each worker it forks later. Other servers: no.
    """
    if vars(app).get(_FETCHED):
        return
    setattr(app, _FETCHED, True)
    if _WORKERS not in sys.modules:
        return
    worker = _worker()
    if worker is not None:
        warm(app, _heartbeat(worker))
    else:
        os.register_at_fork(after_in_child=lambda: _forked(app))
