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

"""CDI DataVolumes (import from HTTP, blank).

The DataVolume controller keeps a PVC of the same name (owned by the
DataVolume) and walks ``status.phase`` through WaitForFirstConsumer,
ImportScheduled, ImportInProgress and Succeeded. A DataVolume whose
name's PVC is being deleted (or belongs to another DataVolume) waits
for it to go, as CDI's ``validatePVC`` does. HTTP imports really fetch
the URL (with the Secret's credentials and the ConfigMap's CA
certificates, or no verification with ``insecureSkipVerify``) on an
importer thread. A failing importer is restarted as
kubelet restarts CDI's importer pod (at once, then after 10 s, 20 s, ...
up to 5 min): ``status.restartCount`` grows, the ``Running`` condition is
False with reason ``Error`` and the importer's message, and the phase
stays (CDI v1.66 sets ``Failed`` only on a checksum mismatch, which is not
modelled). As Go's net/http (CDI's importer) does, the credentials
follow a redirect only to the same host or one of its subdomains.
``install`` also starts the ownerReference garbage collector
(``garbagecollector``), unless ``owner_gc=False`` (a real
kube-controller-manager collects).
"""

import base64
import json
import logging
import math
import ssl
import threading
import urllib.error
import urllib.parse
import urllib.request

from kubernetes import utils

from sushy_kubevirt.simulator import apistatus
from sushy_kubevirt.simulator import clock
from sushy_kubevirt.simulator import garbagecollector
from sushy_kubevirt.simulator import pvcprotection
from sushy_kubevirt.simulator import storage

LOG = logging.getLogger(__name__)

GROUP = 'cdi.kubevirt.io'
VERSION = 'v1beta1'
DV_RT = storage.ResourceType(GROUP, VERSION, 'datavolumes', 'DataVolume',
                             short_names=('dv', 'dvs'))
CDI_CONTROLLER = 'cdi-controller'  # field managers
KUBE_CONTROLLER_MANAGER = 'kube-controller-manager'
ANN_IMMEDIATE = 'cdi.kubevirt.io/storage.bind.immediate.requested'
ANN_DEFAULT_SC = 'storageclass.kubernetes.io/is-default-class'
FILESYSTEM_OVERHEAD = 0.055
#: ImportRestart: kubelet's first crash-loop back-off (doubled per
#: restart up to :data:`MAX_RESTART_DELAY`).
DEFAULT_DELAYS = {'ImportScheduled': 0.2, 'ImportInProgress': 0.5,
                  'ImportRestart': 10.0}
MAX_RESTART_DELAY = 300.0
FINAL = ('Succeeded', 'Failed')
ORDER = ('', 'Pending', 'WaitForFirstConsumer', 'ImportScheduled',
         'ImportInProgress', 'Succeeded', 'Failed')
CHUNK = 256 * 1024
#: What CDI's import controller leaves on a PVC whose importer succeeded.
#: A DataVolume made again under the name of a PVC still being deleted
#: reads its Bound and Running conditions from them.
ANN_COMPLETED = {
    'cdi.kubevirt.io/storage.pod.phase': 'Succeeded',
    'cdi.kubevirt.io/storage.condition.running': 'false',
    'cdi.kubevirt.io/storage.condition.running.reason': 'Completed',
    'cdi.kubevirt.io/storage.condition.running.message': 'Import Complete'}
ANN_RUNNING = 'cdi.kubevirt.io/storage.condition.running'


class ImportFailed(Exception):
    """The importer failed; the message is what CDI reports."""


def parse_quantity(text):
    """Bytes in a Kubernetes quantity (``10Gi``, ``1.5G``, ``1e9``).

    Rounded up to an integer, as ``resource.Quantity.Value()``; raises
    ValueError.
    """
    return math.ceil(utils.parse_quantity(text))


def restart_delay(restarts, base):
    """Seconds before restart number ``restarts + 1`` (kubelet's back-off).

    The first restart is at once, then ``base`` doubled each time, at most
    :data:`MAX_RESTART_DELAY`.
    """
    if restarts < 1:
        return 0.0
    return min(base * 2 ** (restarts - 1), max(base, MAX_RESTART_DELAY))


def owner_ref(owner):
    return {'apiVersion': owner['apiVersion'], 'kind': owner['kind'],
            'name': owner['metadata']['name'],
            'uid': owner['metadata']['uid'],
            'controller': True, 'blockOwnerDeletion': True}


def dv_from_template(vm, template, owners=None):
    """A DataVolume for one of ``vm``'s dataVolumeTemplates."""
    meta = template.get('metadata') or {}
    body = {'apiVersion': '%s/%s' % (GROUP, VERSION), 'kind': 'DataVolume',
            'metadata': {'name': meta['name'],
                         'namespace': vm['metadata']['namespace'],
                         'ownerReferences': ([owner_ref(vm)] if owners is None
                                             else list(owners))},
            'spec': dict(template.get('spec') or {})}
    for key in ('labels', 'annotations'):
        if meta.get(key):
            body['metadata'][key] = dict(meta[key])
    return body


def storage_spec(dv):
    """(storage request bytes or None, storageClassName, volumeMode, modes)."""
    spec = dv.get('spec') or {}
    storage = spec.get('storage') or spec.get('pvc') or {}
    request = ((storage.get('resources') or {}).get('requests')
               or {}).get('storage')
    return (parse_quantity(request) if request else None,
            storage.get('storageClassName'),
            storage.get('volumeMode') or 'Filesystem',
            storage.get('accessModes') or ['ReadWriteOnce'])


def _condition(ctype, value, reason='', message=''):
    stamp = storage.now_iso()
    return {'type': ctype, 'status': value, 'reason': reason,
            'message': message, 'lastTransitionTime': stamp,
            'lastHeartbeatTime': stamp}


def set_conditions(status, *conditions):
    """Replace conditions by type, keeping timestamps of unchanged ones."""
    current = {c['type']: c for c in status.get('conditions') or []}
    for cond in conditions:
        old = current.get(cond['type'])
        if old and all(old.get(k) == cond[k]
                       for k in ('status', 'reason', 'message')):
            continue
        current[cond['type']] = cond
    status['conditions'] = [current[t] for t in ('Bound', 'Ready', 'Running')
                            if t in current]


def pvc_for(dv, storage_class):
    size, _sc, mode, access = storage_spec(dv)
    meta = dv['metadata']
    source = (dv.get('spec') or {}).get('source') or {}
    annotations = {'cdi.kubevirt.io/storage.contentType': 'kubevirt'}
    if 'http' in source:
        annotations['cdi.kubevirt.io/storage.import.endpoint'] = (
            source['http'].get('url', ''))
        annotations['cdi.kubevirt.io/storage.import.source'] = 'http'
    elif 'blank' in source:
        annotations['cdi.kubevirt.io/storage.import.source'] = 'none'
    spec = {'accessModes': list(access), 'volumeMode': mode,
            'resources': {'requests': {'storage': str(size or 0)}}}
    if storage_class:
        spec['storageClassName'] = storage_class
    return {'apiVersion': 'v1', 'kind': 'PersistentVolumeClaim',
            'metadata': {'name': meta['name'], 'namespace': meta['namespace'],
                         'labels': {'app': 'containerized-data-importer',
                                    'app.kubernetes.io/managed-by':
                                        'cdi-controller'},
                         'annotations': annotations,
                         'ownerReferences': [owner_ref(dv)],
                         # As kube-apiserver's StorageObjectInUseProtection
                         # admission plugin adds it.
                         'finalizers': [pvcprotection.FINALIZER]},
            'spec': spec, 'status': {'phase': 'Pending'}}


def bound_status(pvc):
    return {'phase': 'Bound',
            'accessModes': list(pvc['spec'].get('accessModes') or []),
            'capacity': {'storage': pvc['spec']['resources']['requests'][
                'storage']}}


def succeeded_status(status, claim):
    status.update(phase='Succeeded', progress='100.0%', claimName=claim,
                  restartCount=status.get('restartCount', 0))
    set_conditions(status,
                   _condition('Bound', 'True', 'Bound',
                              'PVC %s Bound' % claim),
                   _condition('Ready', 'True'),
                   _condition('Running', 'False', 'Completed',
                              'Import Complete'))


def create_settled(store, namespace, template):
    """Create an imported DataVolume and its bound PVC (for seeding)."""
    pvc_rt = store.resource('', 'persistentvolumeclaims')
    name = template['metadata']['name']
    body = dv_from_template({'metadata': {'namespace': namespace}},
                            template, owners=())
    succeeded_status(body.setdefault('status', {}), name)
    dv = store.create(DV_RT, body)
    pvc = pvc_for(dv, storage_spec(dv)[1])
    pvc['spec']['volumeName'] = 'pvc-%s' % dv['metadata']['uid']
    pvc['status'] = bound_status(pvc)
    pvc['metadata']['annotations'].update(ANN_COMPLETED)
    store.create(pvc_rt, pvc)
    return dv


def waiting_conditions(pvc):
    """A DataVolume's conditions while ``pvc`` of its name is not its own.

    CDI reads them from that PVC, and leaves the phase empty.
    """
    name = pvc['metadata']['name']
    annotations = pvc['metadata'].get('annotations') or {}
    bound = (pvc.get('status') or {}).get('phase')
    return [
        _condition('Bound', 'True', 'Bound', 'PVC %s Bound' % name)
        if bound == 'Bound' else
        _condition('Bound', 'False', 'Pending', 'PVC %s Pending' % name)
        if bound == 'Pending' else _condition('Bound', 'False'),
        _condition('Ready', 'False'),
        _condition('Running', 'True' if annotations.get(
            ANN_RUNNING) == 'true' else 'False',
            annotations.get(ANN_RUNNING + '.reason', ''),
            annotations.get(ANN_RUNNING + '.message', ''))]


def adopt(store, dv, owner):
    """Make ``owner`` the controller of ``dv``."""
    store.mutate(DV_RT, dv['metadata']['namespace'], dv['metadata']['name'],
                 lambda o: o['metadata'].__setitem__(
                     'ownerReferences', [owner_ref(owner)]))


def checked_url(url):
    """``url`` if the importer can request it, else ImportFailed."""
    if not isinstance(url, str) or not url:
        raise ImportFailed('Unable to connect to http data source: no URL')
    if any(ord(c) < 0x21 or ord(c) == 0x7f for c in url):
        raise ImportFailed('Unable to connect to http data source: invalid '
                           'URL %s: contains a control character or '
                           'space' % _printable(url))
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname
        if parts.port == 0:  # reading .port raises ValueError if bad
            raise ValueError('port 0')
    except ValueError as exc:
        raise ImportFailed('Unable to connect to http data source: invalid '
                           'URL %s: %s' % (_printable(url), exc))
    if parts.scheme not in ('http', 'https') or not host:
        raise ImportFailed('Unable to connect to http data source: invalid '
                           'URL %s: expected http(s)://host/path'
                           % _printable(url))
    return url


def _printable(url):
    return json.dumps(url)


def _same_site(initial, target):
    """Go's isDomainOrSubdomain on the two URLs' host names."""
    sub = (urllib.parse.urlsplit(target).hostname or '').lower()
    parent = (urllib.parse.urlsplit(initial).hostname or '').lower()
    return sub == parent or sub.endswith('.' + parent)


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Follows redirects; credentials only to the same host or below."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        new = super().redirect_request(req, fp, code, msg, headers, newurl)
        auth = req.unredirected_hdrs.get('Authorization')
        if new is not None and auth and _same_site(req.full_url, newurl):
            new.add_unredirected_header('Authorization', auth)
        return new


class DataVolumeController:
    """Reconciles DataVolumes and runs their importers."""

    def __init__(self, sim, owner_gc=True):
        self.sim = sim
        self.store = storage.Manager(sim.store, CDI_CONTROLLER)
        # PVC binding and garbage collection: kube-controller-manager's.
        self.kcm = storage.Manager(sim.store, KUBE_CONTROLLER_MANAGER)
        self.delays, self.scheduler = clock.for_controller(
            sim, DEFAULT_DELAYS, 'sim-cdi')
        self.gc = (garbagecollector.OwnerGC(self.store, self.scheduler)
                   if owner_gc else None)
        self._stop = threading.Event()
        self._imports = {}
        self._restarts = {}     # dv uid -> simulated time the restart is due
        self._lock = threading.Lock()

    def start(self):
        self.store.register(DV_RT)
        self.pvc_rt = self.store.resource('', 'persistentvolumeclaims')
        self.store.subscribe(self.on_event, loaded=self.on_loaded)
        self.scheduler.start()
        return self

    def stop(self):
        self._stop.set()
        self.scheduler.stop()
        with self._lock:
            threads = list(self._imports.values())
        for thread in threads:
            thread.join(timeout=5)

    # events -------------------------------------------------------------

    def on_loaded(self, rt, obj):
        """A restored object: settled, only the garbage collector's."""
        if self.gc is not None:
            self.gc.on_event('ADDED', rt, obj, None)

    def on_event(self, event, rt, obj, old):
        if self.gc is not None:
            self.gc.on_event(event, rt, obj, old)
        meta = obj.get('metadata') or {}
        ns = meta.get('namespace')
        if rt.key in (DV_RT.key, '/persistentvolumeclaims'):
            if event == 'DELETED' and rt.key == DV_RT.key:
                with self._lock:
                    self._restarts.pop(meta.get('uid'), None)
            self.enqueue(ns, meta.get('name'))
        elif rt.key == 'kubevirt.io/virtualmachineinstances':
            for vol in (obj.get('spec') or {}).get('volumes') or ():
                claim = (vol.get('dataVolume') or {}).get('name') or (
                    vol.get('persistentVolumeClaim') or {}).get('claimName')
                if claim:
                    self.enqueue(ns, claim)

    def enqueue(self, namespace, name, delay=0.0):
        self.scheduler.call_later(
            delay, lambda: self.reconcile(namespace, name),
            key=(namespace, name))

    # reconcile ----------------------------------------------------------

    def storage_class(self, name):
        sc_rt = self.store.resource('storage.k8s.io', 'storageclasses')
        if name:
            return self.store.try_get(sc_rt, None, name)
        for sc in self.store.list(sc_rt)[0]:
            annotations = sc['metadata'].get('annotations') or {}
            if annotations.get(ANN_DEFAULT_SC) == 'true':
                return sc
        return None

    def has_consumer(self, namespace, name):
        vmi_rt = self.store.resource('kubevirt.io', 'virtualmachineinstances')
        for vmi in self.store.list(vmi_rt, namespace)[0]:
            if (vmi.get('status') or {}).get('phase') in FINAL:
                continue
            for vol in (vmi.get('spec') or {}).get('volumes') or ():
                if name in ((vol.get('dataVolume') or {}).get('name'),
                            (vol.get('persistentVolumeClaim')
                             or {}).get('claimName')):
                    return True
        return False

    def reconcile(self, namespace, name):
        dv = self.store.try_get(DV_RT, namespace, name)
        if dv is None or dv['metadata'].get('deletionTimestamp'):
            return
        phase = (dv.get('status') or {}).get('phase', '')
        if phase in FINAL:
            return
        sc = self.storage_class(storage_spec(dv)[1])
        pvc = self.store.try_get(self.pvc_rt, namespace, name)
        if pvc is not None and not self.claimable(dv, pvc):
            self._mutate_status(dv, lambda status: set_conditions(
                status, *waiting_conditions(pvc)))
            return      # enqueued again by the PVC's events
        if pvc is None:
            body = pvc_for(dv, sc['metadata']['name'] if sc else None)
            pvc = self.store.create(self.pvc_rt, body)
            self.set_status(dv, 'Pending', [
                _condition('Bound', 'False', 'Pending',
                           'PVC %s Pending' % name),
                _condition('Ready', 'False'),
                _condition('Running', 'False')], progress='N/A')
        wffc = (sc is not None
                and sc.get('volumeBindingMode') == 'WaitForFirstConsumer'
                and ANN_IMMEDIATE not in (dv['metadata'].get('annotations')
                                          or {}))
        if (wffc and phase in ('', 'Pending', 'WaitForFirstConsumer')
                and not self.has_consumer(namespace, name)):
            self.set_status(dv, 'WaitForFirstConsumer', [], progress='N/A')
            return
        if (pvc.get('status') or {}).get('phase') != 'Bound':
            self.bind(pvc)
        if ORDER.index(phase) < ORDER.index('ImportScheduled'):
            self.set_status(dv, 'ImportScheduled', [
                _condition('Bound', 'True', 'Bound', 'PVC %s Bound' % name),
                _condition('Running', 'False', 'Pending',
                           'Import pod pending')], progress='N/A')
            self.enqueue(namespace, name, self.delays['ImportScheduled'])
            return
        if 'blank' in ((dv.get('spec') or {}).get('source') or {}):
            self._succeeded(dv)
            return
        due = self._restarts.get(dv['metadata']['uid'])
        if due is not None and due > self.scheduler.clock.now():
            self.enqueue(namespace, name, due - self.scheduler.clock.now())
            return
        self.start_import(dv)

    @staticmethod
    def claimable(dv, pvc):
        """False while ``pvc`` is being deleted or is another DataVolume's.

        CDI waits (``ErrResourceMarkedForDeletion``, ``ErrResourceExists``):
        the DataVolume keeps no phase until the PVC is gone.
        """
        if pvc['metadata'].get('deletionTimestamp'):
            return False
        return all(ref.get('uid') == dv['metadata']['uid']
                   for ref in pvc['metadata'].get('ownerReferences') or ()
                   if ref.get('controller'))

    def bind(self, pvc):
        ns, name = pvc['metadata']['namespace'], pvc['metadata']['name']
        volume = 'pvc-%s' % pvc['metadata']['uid']
        self.kcm.mutate(self.pvc_rt, ns, name, lambda o: o['spec'].
                        setdefault('volumeName', volume))
        self.kcm.mutate(self.pvc_rt, ns, name,
                        lambda o: o.__setitem__('status', bound_status(o)),
                        subresource='status')

    def set_status(self, dv, phase, conditions, **fields):
        """Move ``dv`` forward to ``phase``; never backwards from final."""
        def change(status):
            current = status.get('phase', '')
            if current in FINAL and phase != current:
                return
            status['phase'] = phase
            status.setdefault('restartCount', 0)
            status['claimName'] = dv['metadata']['name']
            status.update(fields)
            set_conditions(status, *conditions)
        self._mutate_status(dv, change)

    def _mutate_status(self, dv, fn):
        """``fn(status)`` on this very DataVolume (same uid), if it exists."""
        uid = dv['metadata']['uid']

        def change(obj):
            if obj['metadata']['uid'] == uid:
                fn(obj.setdefault('status', {}))
        with apistatus.ignoring(404):
            self.store.mutate(DV_RT, dv['metadata']['namespace'],
                              dv['metadata']['name'], change,
                              subresource='status')

    def _succeeded(self, dv):
        """``dv`` imported: its status, and its PVC's annotations."""
        ns, name = dv['metadata']['namespace'], dv['metadata']['name']
        with apistatus.ignoring(404):
            self.store.mutate(
                self.pvc_rt, ns, name, lambda o: o['metadata'].setdefault(
                    'annotations', {}).update(ANN_COMPLETED))
        self._mutate_status(dv, lambda status: status.get(
            'phase') in FINAL or succeeded_status(status, name))

    # importer -----------------------------------------------------------

    def start_import(self, dv):
        uid = dv['metadata']['uid']
        with self._lock:
            if uid in self._imports or self._stop.is_set():
                return
            restart = self._restarts.pop(uid, None) is not None
            thread = threading.Thread(target=self._import, args=(dv,),
                                      name='sim-importer', daemon=True)
            self._imports[uid] = thread
        if restart:
            self._count_restart(dv)
        thread.start()

    def _count_restart(self, dv):
        """The importer pod's container restarted: ``restartCount`` + 1."""
        def change(obj):
            status = obj.setdefault('status', {})
            if obj['metadata']['uid'] == dv['metadata']['uid'] and \
                    status.get('phase') not in FINAL:
                status['restartCount'] = status.get('restartCount', 0) + 1
        with apistatus.ignoring(404):
            self.store.mutate(DV_RT, dv['metadata']['namespace'],
                              dv['metadata']['name'], change,
                              subresource='status')

    def _failed(self, dv, message):
        """The importer exited with an error: report it, restart later.

        As the importer pod's container terminating does: the phase stays
        ImportInProgress (the pod runs on), ``Running`` is False with
        reason ``Error`` and the termination message.
        """
        self.set_status(dv, 'ImportInProgress', [
            _condition('Ready', 'False'),
            _condition('Running', 'False', 'Error', message)])
        current = self.store.try_get(DV_RT, dv['metadata']['namespace'],
                                     dv['metadata']['name']) or dv
        restarts = (current.get('status') or {}).get('restartCount', 0)
        delay = restart_delay(restarts, self.delays['ImportRestart'])
        with self._lock:
            self._restarts[dv['metadata']['uid']] = (
                self.scheduler.clock.now() + delay)
        return delay

    def _import(self, dv):
        retry = None
        try:
            source = dv['spec'].get('source') or {}
            if 'http' in source:
                self._finish(dv, self._fetch(dv, source['http']))
            else:
                self.set_status(dv, 'ImportScheduled', [_condition(
                    'Running', 'False', 'Unsupported',
                    'source not modelled by the simulator')])
        except ImportFailed as exc:
            retry = self._failed(dv, str(exc))
        except Exception as exc:  # noqa: broad: never leave it scheduled
            LOG.exception('importer failed for %s', dv['metadata']['name'])
            retry = self._failed(dv, 'Unable to process data: %s' % exc)
        finally:
            with self._lock:
                self._imports.pop(dv['metadata']['uid'], None)
        if retry is not None:
            self.enqueue(dv['metadata']['namespace'],
                         dv['metadata']['name'], retry)

    def _request(self, dv, http):
        ns = dv['metadata']['namespace']
        request = urllib.request.Request(checked_url(http.get('url')))
        for header in http.get('extraHeaders') or ():
            key, _sep, value = header.partition(':')
            request.add_header(key.strip(), value.strip())
        if http.get('secretRef'):
            data = self._lookup('secrets', ns, http['secretRef'])
            user = base64.b64decode(data.get('accessKeyId', '')).decode()
            password = base64.b64decode(data.get('secretKey', '')).decode()
            token = base64.b64encode(
                ('%s:%s' % (user, password)).encode()).decode()
            # Not copied to redirects; _Redirects re-adds it where allowed.
            request.add_unredirected_header('Authorization',
                                            'Basic ' + token)
        context = None
        if http.get('insecureSkipVerify'):
            context = ssl.create_default_context()
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif http.get('certConfigMap'):
            context = trusting(self._lookup('configmaps', ns,
                                            http['certConfigMap']))
        return request, context

    def _lookup(self, plural, namespace, name):
        obj = self.store.try_get(self.store.resource('', plural), namespace,
                                 name)
        if obj is None:
            raise ImportFailed('%s "%s" not found' % (plural[:-1], name))
        return obj.get('data') or {}

    def _fetch(self, dv, http):
        request, context = self._request(dv, http)
        size, _sc, mode, _modes = storage_spec(dv)
        available = None
        if size is not None:
            available = (size if mode == 'Block'
                         else int(size * (1 - FILESYSTEM_OVERHEAD)))
        opener = urllib.request.build_opener(
            urllib.request.HTTPSHandler(context=context), _Redirects())
        try:
            response = opener.open(request, timeout=10)
        except urllib.error.HTTPError as exc:
            raise ImportFailed(
                'Unable to connect to http data source: expected status '
                'code 200, got %d. Status: %d %s'
                % (exc.code, exc.code, exc.reason))
        except (urllib.error.URLError, OSError, ValueError) as exc:
            raise ImportFailed('Unable to connect to http data source: %s'
                               % getattr(exc, 'reason', exc))
        with response:
            total = int(response.headers.get('Content-Length') or 0)
            self.set_status(dv, 'ImportInProgress', [
                _condition('Ready', 'False', 'TransferRunning'),
                _condition('Running', 'True', 'Pod is running')],
                progress='0.00%')
            done = 0
            while not self._stop.is_set():
                chunk = response.read(CHUNK)
                if not chunk:
                    break
                done += len(chunk)
                if available is not None and done > available:
                    break
        if available is not None and done > available:
            raise ImportFailed(
                'Virtual image size %d is larger than the reported available '
                'storage %d. A larger PVC is required.'
                % (max(done, total), available))
        return done

    def _finish(self, dv, size):
        """Simulate writing the image over the ImportInProgress stage."""
        duration = self.delays['ImportInProgress']
        steps = 4 if duration > 0 else 0
        for step in range(steps):
            self.set_status(dv, 'ImportInProgress', [
                _condition('Ready', 'False', 'TransferRunning'),
                _condition('Running', 'True', 'Pod is running')],
                progress='%.2f%%' % (100.0 * step / steps))
            pause = self.scheduler.clock.real_seconds(duration / steps)
            if self._stop.wait(pause):
                return
        self._succeeded(dv)


def trusting(data):
    """A client context trusting the system's CAs and those of ``data``.

    As CDI's importer reads its ``certConfigMap``: the PEM certificates
    of every key (its files; those named with a leading dot skipped), on
    top of the system's.
    """
    context = ssl.create_default_context()
    for key, text in sorted(data.items()):
        if key.startswith('.'):
            continue
        try:
            context.load_verify_locations(cadata=text)
        except (ssl.SSLError, ValueError):
            LOG.warning('No certs in %s', key)
    return context


def install(sim, owner_gc=True):
    """Register DataVolumes and start the CDI controller (and the GC)."""
    return DataVolumeController(sim, owner_gc).start()
