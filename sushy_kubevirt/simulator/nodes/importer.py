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

"""CDI's importer pods, run: the source is fetched as cdi-importer would.

The real cdi-controller makes an importer pod (``restartPolicy:
OnFailure``) whose container reads ``IMPORTER_ENDPOINT``. Here, once the
kubelet runs it, an ``http`` source's URL is fetched (a GET;
``INSECURE_TLS`` skips verification; else the system's CAs are trusted
and, with ``IMPORTER_CERT_DIR``, those of the ConfigMap mounted there,
as cdi-importer reads that directory); other sources (``none``: a blank
disk) succeed at once. A 200 ends the container, after the
``ImportInProgress`` stage delay (the image being written), with exit
code 0 and the JSON termination message cdi-importer writes (``Import
Complete``); anything else with exit code 1 and its words (``Unable to
connect to http data source: ...``). A failed container restarts as a
kubelet restarts it: its exit is reported (CDI takes the message from
it), a second later it waits in ``CrashLoopBackOff`` for 10 s, doubling
up to 5 minutes, and then runs again with the restart count one higher.
"""

import json
import ssl
import threading
import urllib.error
import urllib.request

from sushy_kubevirt.simulator import cdi
from sushy_kubevirt.simulator.nodes import kubelet as kubelet_mod
from sushy_kubevirt.simulator import storage

LABEL = ('app', 'containerized-data-importer')
FETCH_TIMEOUT = 10.0
READ_BYTES = 1 << 20
BACKOFF_FIRST, BACKOFF_MAX = 10.0, 300.0
SYNC_PERIOD = 1.0       # the kubelet reports an exit, then the back-off
COMPLETE = json.dumps({'scratchSpaceRequired': False,
                       'preallocationApplied': False,
                       'message': 'Import Complete'},
                      separators=(',', ':'))


def backoff(restarts):
    """The kubelet's crash-loop back-off before restart ``restarts + 1``."""
    return min(BACKOFF_FIRST * 2 ** restarts, BACKOFF_MAX)


def is_importer(pod):
    return (pod['metadata'].get('labels') or {}).get(LABEL[0]) == LABEL[1]


def mounted_configmap(pod, path):
    """The ConfigMap of the importer's volume mounted at ``path``, or None."""
    mounts = {m.get('name') for m in pod['spec']['containers'][0].get(
        'volumeMounts') or () if m.get('mountPath') == path}
    for volume in pod['spec'].get('volumes') or ():
        if volume.get('name') in mounts and volume.get('configMap'):
            return volume['configMap'].get('name')
    return None


def fetch(url, insecure=False, certs=None):
    """``(True, None)`` once the source answers 200, else (False, why).

    ``certs``: the data of the ConfigMap of CA certificates, if any.
    """
    context = None
    if url.startswith('https:'):
        context = cdi.trusting(certs or {})
        if insecure:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
    try:
        with urllib.request.urlopen(url, timeout=FETCH_TIMEOUT,
                                    context=context) as resp:
            resp.read(READ_BYTES)
            if resp.status != 200:
                return False, 'expected status code 200, got %d. Status: ' \
                    '%d %s' % (resp.status, resp.status, resp.reason)
            return True, None
    except urllib.error.HTTPError as exc:
        return False, 'expected status code 200, got %d. Status: %d %s' % (
            exc.code, exc.code, exc.reason)
    except (OSError, ValueError) as exc:
        reason = getattr(exc, 'reason', exc)
        return False, 'HTTP request errored: Get "%s": %s' % (url, reason)


class Importer:
    """Runs the importer containers of the kubelet's pods."""

    def __init__(self, kubelet, delays):
        self.kubelet = kubelet
        #: ``ImportInProgress``: sim seconds a successful import writes.
        self.delays = delays
        self._runs = set()      # (pod uid, restart count) fetched or due

    def sync(self, pod):
        """Called for a running importer pod: fetch once per start."""
        status = pod.get('status') or {}
        containers = status.get('containerStatuses') or ()
        if not containers or 'running' not in containers[0].get('state', {}):
            return
        run = (pod['metadata']['uid'], containers[0].get('restartCount', 0))
        if run in self._runs:
            return
        self._runs.add(run)
        env = {e['name']: e.get('value', '')
               for e in pod['spec']['containers'][0].get('env') or ()}
        threading.Thread(target=self._run, args=(pod, env), daemon=True,
                         name='sim importer').start()

    def _certs(self, pod, env):
        """The data of the CA ConfigMap mounted at ``IMPORTER_CERT_DIR``."""
        name = env.get('IMPORTER_CERT_DIR') and mounted_configmap(
            pod, env['IMPORTER_CERT_DIR'])
        if not name:
            return None
        found = self.kubelet.store.read_live(
            kubelet_mod.CONFIGMAPS, pod['metadata']['namespace'], name)
        return (found or {}).get('data') or {}

    def _run(self, pod, env):
        ok, why, writing = True, None, 0
        if env.get('IMPORTER_SOURCE') == 'http':
            ok, why = fetch(env.get('IMPORTER_ENDPOINT', ''),
                            env.get('INSECURE_TLS') == 'true',
                            self._certs(pod, env))
            writing = self.delays['ImportInProgress'] if ok else 0
        self.kubelet.scheduler.call_later(
            writing, lambda: self._ended(pod, ok, why))

    def _ended(self, pod, ok, why):
        now = storage.now_iso()
        if ok:
            def done(status):
                container = status['containerStatuses'][0]
                container.update(ready=False, started=False, state={
                    'terminated': {'exitCode': 0, 'reason': 'Completed',
                                   'message': COMPLETE, 'startedAt': now,
                                   'finishedAt': now}})
                status['phase'] = 'Succeeded'
            self.kubelet.set_pod_status(pod, done)
            return
        message = 'Unable to connect to http data source: %s' % why
        terminated = {'exitCode': 1, 'reason': 'Error', 'message': message,
                      'startedAt': now, 'finishedAt': now}

        def exited(status):
            status['containerStatuses'][0].update(
                ready=False, started=False, state={'terminated': terminated})
        self.kubelet.set_pod_status(pod, exited)
        self.kubelet.scheduler.call_later(
            SYNC_PERIOD, lambda: self._back_off(pod, terminated))

    def _back_off(self, pod, terminated):
        """The kubelet's next sync: waiting to restart the container."""
        restarts = []

        def waiting(status):
            container = status['containerStatuses'][0]
            if 'terminated' not in container.get('state', {}):
                return
            restarts.append(container.get('restartCount', 0))
            container.update(lastState={'terminated': terminated}, state={
                'waiting': {'reason': 'CrashLoopBackOff',
                            'message': 'back-off %ds restarting failed '
                            'container=%s pod=%s' % (
                                backoff(restarts[0]), container['name'],
                                pod['metadata']['name'])}})
        self.kubelet.set_pod_status(pod, waiting)
        if restarts:
            self.kubelet.scheduler.call_later(
                backoff(restarts[0]), lambda: self._restart(pod))

    def _restart(self, pod):
        now = storage.now_iso()

        def restart(status):
            container = status['containerStatuses'][0]
            if 'waiting' not in container.get('state', {}):
                return
            container.update(restartCount=container.get(
                'restartCount', 0) + 1, started=True,
                state={'running': {'startedAt': now}})
        self.kubelet.set_pod_status(pod, restart)
