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

"""Each deploy and BIOS step's Kubernetes API calls, for ``bench.fleet``.

:func:`probe` takes one node through Ironic's deploy and another through
a BIOS apply (:mod:`.fleetdrive`), one request at a time, and counts the
emulator's calls of each step from the server's request log (the real
kube-apiserver's audit log), to compare with :data:`EXPECTED`.
"""

import collections
import time

from sushy_kubevirt.bench import fleetdrive
from sushy_kubevirt.bench import load
from sushy_kubevirt.bench import targets

#: Kubernetes API calls per step of one node, the documented minimum
#: (doc/source/conformance.rst, "Kubernetes API calls per Redfish
#: operation" and "Ironic's virtual-media boot"). ``power_on`` includes
#: the one-time boot the emulator restores by itself as the VMI appears.
EXPECTED = {
    'poll': 0, 'media_get': 0, 'insert': 2, 'boot_once': 1, 'power_on': 5,
    'eject': 2, 'bios_patch': 1, 'bios_apply': 4,
}
#: Steps of several request kinds: a reset and the polls until it shows
#: (the emulator's own calls as the VM starts may come during either).
STEPS = {'power_on': ('reset_on', 'wait_on'),
         'bios_apply': ('bios_reset', 'bios_wait')}
#: A reset refused while the image imports: the VM and its image read live.
EXPECTED_REFUSED = 2
#: The kinds during which the emulator finishes a boot by itself
#: (``drivers/afterboot.py``): only its successful writes are the step's.
AFTER_BOOT = ('wait_on', 'bios_wait')
#: The orphan collector's lists of the tray Secrets: each worker's first
#: per namespace, then one per namespace every ``orphan_sweep`` seconds.
BACKGROUND = ('list secrets',)
MUTATING = ('create', 'update', 'patch', 'delete', 'deletecollection')
#: A guarded write refused: a resourceVersion moved, a JSON patch test.
CONFLICT = (409, 422)


class Probe:
    """Send one request at a time; the emulator's calls of each, by kind.

    Each request, sent 1 s after the answer before, owns the calls from
    the end of the one before to its own end; :meth:`settle` gives a
    kind the calls the emulator makes by itself afterwards (until it has
    been quiet for ``quiet_s``). Counted
    apart: the orphan collector's periodic lists (:data:`BACKGROUND`),
    each write refused with a 409 or 422 and its retry's read (2 calls),
    and the reads and refused writes of :data:`AFTER_BOOT` (every worker
    sees the VMI start; one writes, the others race it: ``races``).
    """

    def __init__(self, target, port):
        self.target = target
        self.client = load.Client(port, False, 60.0)
        self.calls = collections.defaultdict(collections.Counter)
        self.conflicts = collections.Counter()
        self.background = collections.Counter()
        self.races = collections.Counter()
        self.sent = collections.Counter()
        self.statuses = collections.defaultdict(collections.Counter)
        self.mark = time.time()
        #: seconds between two requests: the watch delivers a write
        #: before the next request (else a reset reads the VMI too)
        self.gap_s = 1.0

    def _entries(self, until):
        return self.target.cluster.request_log.entries(
            user=targets.EMULATOR_USER, verb=lambda verb: verb != 'watch',
            started=lambda t: self.mark <= t <= until)

    def _take(self, kind, until):
        for entry in self._entries(until):
            key = '%s %s' % (entry['verb'], entry['resource'])
            wrote = entry['verb'] in MUTATING and (entry['status'] or 0) < 400
            if key in BACKGROUND:
                self.background[key] += 1
                continue
            if kind in AFTER_BOOT and not wrote:
                self.races[key] += 1
                continue
            if (entry['status'] or 200) >= 400:
                key = '%s (%s)' % (key, entry['status'])
            self.calls[kind][key] += 1
            if entry['status'] in CONFLICT and entry['verb'] in MUTATING:
                self.conflicts[kind] += 1
        self.mark = until + 1e-6

    def send(self, kind, method, path, body=None):
        time.sleep(self.gap_s)
        status, content = self.client.send(method, path, body)
        self._take(kind, time.time())
        self.sent[kind] += 1
        self.statuses[kind][str(status)] += 1
        return status, content

    def settle(self, kind, quiet_s=2.0, deadline_s=30.0):
        deadline = time.monotonic() + deadline_s
        seen = -1
        while time.monotonic() < deadline:
            time.sleep(quiet_s)
            now = len(self._entries(time.time()))
            if now == seen:
                break
            seen = now
        self._take(kind, time.time())

    def steps(self):
        """``{kind: calls per node}``, conflicts' retries apart."""
        return {kind: sum(self.calls[kind].values())
                - 2 * self.conflicts[kind] for kind in self.sent}


def probe(target, port, nodes, image_url, deadline_s):
    """One node's poll, deploy and (another's) BIOS apply, counted."""
    p = Probe(target, port)
    for kind, method, path, body in load.poll(nodes[0]):
        p.send('poll', method, path, body)
    p.sent['poll'] = 1
    deadline = time.monotonic() + deadline_s
    send = p.send

    def deploy_send(kind, method, path, body=None):
        if kind == 'eject' and p.sent['wait_on']:
            p.settle('wait_on')
        return send(kind, method, path, body)

    fleetdrive.deploy(deploy_send, nodes[1], image_url, deadline, 0.5, 0.5)
    fleetdrive.bios(send, nodes[2], deadline, 0.5, 0.5)
    p.settle('bios_wait')
    steps = p.steps()
    for step, kinds in STEPS.items():
        steps[step] = sum(steps.pop(kind, 0) for kind in kinds)
    # A reset refused while the image imports is counted apart.
    refused = p.statuses['reset_on'].get('409', 0)
    steps['power_on'] -= refused * EXPECTED_REFUSED
    steps['reset_refused'] = refused * EXPECTED_REFUSED
    return {'steps': steps, 'requests': dict(p.sent),
            'refused_resets': refused,
            'conflicts': dict(p.conflicts), 'races': dict(p.races),
            'background': dict(p.background),
            'by_call': {k: dict(v) for k, v in p.calls.items()},
            'statuses': {k: dict(v) for k, v in p.statuses.items()}}
