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
"""SimpleUpdate of a VM's BIOS or BMC, run as a task kept on the VM.

:meth:`Updates.start` checks the image URL's host against the
virtual-media host policy (``SUSHY_EMULATOR_KUBEVIRT_VMEDIA_*``), records
a New task on the VM (1 guarded PATCH,
:mod:`sushy_kubevirt.kubevirt.firmwareupdate`) and hands the image check
(:mod:`sushy_kubevirt.imagecheck`: resolve, policy, HEAD, redirects, all
within ``url_timeout`` seconds) to a bounded pool of this process: the
task goes Running (1 PATCH), then Completed or Exception (1 PATCH).
Credentials are sent with the check only, and kept nowhere. Every
process reads the task from its watch cache; one whose process stopped
before its end reads as interrupted once its bound has passed.
"""

import concurrent.futures
import time

from sushy_tools import error

from sushy_kubevirt import imagecheck
from sushy_kubevirt.kube import apierrors
from sushy_kubevirt.kube import client
from sushy_kubevirt.kube import guarded
from sushy_kubevirt.kubevirt import firmwareupdate
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.kubevirt import imageurl
from sushy_kubevirt import messages

#: Image checks running at once in a process (more wait their turn).
CHECKS = 16
#: Seconds a task may stay New, or Running, beyond the check's own limit
#: (waiting its turn in the pool, the patches).
GRACE = 60.0
#: Seconds a finished task stays in the TaskService's listing.
LISTED_FOR = 3600.0
ACTION = 'UpdateService.SimpleUpdate'


def task_id(vm, n):
    """The Task id of task ``n`` of ``vm``: ``<System id>.<n>``."""
    return '%s.%d' % (identity.system_id(vm), n)


class Updates:
    """The firmware updates of a systems driver's VMs (one per process).

    :param systems: the systems driver (``cluster``, ``find_vm``,
        ``placed``).
    :param settings: its virtual-media settings (host policy, timeouts).
    """

    def __init__(self, systems, settings, logger):
        self._systems = systems
        self._settings = settings
        self._logger = logger
        self._policy = None
        self._pool = concurrent.futures.ThreadPoolExecutor(
            CHECKS, thread_name_prefix='firmware-check')

    @property
    def bound(self):
        """Seconds after which an unfinished task reads as interrupted."""
        return self._settings.url_timeout + GRACE

    def policy(self):
        if self._policy is None:
            s = self._settings
            self._policy = imageurl.Policy(
                allowed=s.allowed_hosts, denied=s.denied_hosts,
                endpoints=imagecheck.endpoints(
                    client.api_host(self._systems.cluster.settings),
                    s.url_timeout))
        return self._policy

    def start(self, vm, component, url, credentials=None):
        """Record a New task updating ``component`` of ``vm`` from ``url``.

        :param url: the checked :class:`imageurl.Url` (no userinfo).
        :param credentials: ``(username, password)`` for the check.
        :returns: ``(vm, record)``: the VM patched, its task record.
        :raises messages.RedfishError: 400 when the policy denies the
            host, 409 while the VM's previous update runs.
        """
        reason = imageurl.refusal(self.policy(), url.host, url.port, [])
        if reason:
            raise messages.RedfishError(
                'ActionParameterValueConflict', 'ImageURI',
                imageurl.shown(url.url), properties=['/ImageURI'],
                detail='ImageURI %s is refused: %s' % (url.url, reason))
        now = time.time()

        def build(vm):
            if firmwareupdate.busy(vm, now):
                raise messages.RedfishError(
                    'ResourceInUse', code=409,
                    detail='An update of this system is running (task %s)'
                    % task_id(vm, firmwareupdate.task(vm)['n']))
            return firmwareupdate.new_task_ops(vm, component, url.url, now,
                                               self.bound, vmi)

        namespace, name = identity.key(vm)
        vmi = self._systems.cluster.get_vmi(namespace, name)
        try:
            patched = guarded.guarded_patch(self._systems.cluster, namespace,
                                            name, build)
        except apierrors.NotFound:
            raise error.NotFound('System not found') from None
        record = firmwareupdate.task(patched)
        self._pool.submit(self._run, namespace, name, record['n'], url,
                          credentials)
        return patched, record

    def _patch(self, namespace, name, build):
        guarded.guarded_patch(self._systems.cluster, namespace, name, build)

    def _run(self, namespace, name, n, url, credentials):
        try:
            self._patch(namespace, name, lambda vm: firmwareupdate.running_ops(
                vm, n, time.time()))
            s = self._settings
            reason = None
            try:
                imagecheck.check(url, self.policy(), s.url_timeout,
                                 s.max_redirects, credentials=credentials)
            except imagecheck.Refused as exc:
                reason = 'ImageURI %s is refused: %s' % (url.url, exc)
            except imagecheck.Unavailable as exc:
                reason = 'ImageURI %s cannot be fetched: %s' % (url.url, exc)
            self._patch(namespace, name, lambda vm: firmwareupdate.outcome_ops(
                vm, n, time.time(), reason and imageurl.redact(reason)))
        except Exception:   # a thread's last resort: the bound ends it
            self._logger.exception('VM %s/%s: firmware task %d failed',
                                   namespace, name, n)
        else:
            self._logger.info('VM %s/%s: firmware task %d: %s', namespace,
                              name, n, reason or 'completed')

    def find(self, tid):
        """``(vm, record)`` of Task ``tid``, as readers see it now.

        :raises sushy_tools.error.NotFound: no such task the request's
            account can reach.
        """
        system, _, n = tid.rpartition('.')
        if not system or not n.isdigit():
            raise error.NotFound('Task %s not found' % tid)
        try:
            vm = self._systems.find_vm(system)
        except (error.NotFound, error.AliasAccessError):
            raise error.NotFound('Task %s not found' % tid) from None
        record = firmwareupdate.task(vm)
        if record is None or record['n'] != int(n) or \
                task_id(vm, record['n']) != tid:
            raise error.NotFound('Task %s not found' % tid)
        return vm, firmwareupdate.shown(record, time.time())

    def listed(self):
        """``[(vm, record)]`` of the tasks the TaskService lists.

        The latest task of each VM the request's account reaches, unless
        finished more than :data:`LISTED_FOR` seconds ago.
        """
        now = time.time()
        result = []
        for _, system in self._systems.placed():
            try:
                vm = self._systems.find_vm(system)
            except (error.NotFound, error.AliasAccessError):
                continue
            record = firmwareupdate.task(vm)
            if record is None:
                continue
            record = firmwareupdate.shown(record, now)
            if record['state'] in firmwareupdate.FINISHED and \
                    now > (record.get('end') or 0) + LISTED_FOR:
                continue
            result.append((vm, record))
        return result
