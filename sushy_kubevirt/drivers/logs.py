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
"""The LogServices' records: a System's Events and the security log.

A System's log is read from the Cluster's watch of the Events about VMs,
VMIs and DataVolumes (:data:`EVENTS`), indexed by involved object: one
probe per object of the VM, no API call. ``ClearLog`` POSTs a marker
Event (:mod:`sushy_kubevirt.kubevirt.logentries`), so every process
hides the same entries and the API server keeps the watermark.
"""

import datetime
import os
import socket

from sushy_kubevirt.accounts import securitylog
from sushy_kubevirt import errormap
from sushy_kubevirt.kube import cluster
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt.kubevirt import logentries

#: The Events the Cluster caches for the Systems' logs.
EVENTS = cluster.EventsCache(
    keep=logentries.about_system, transform=logentries.slim,
    indexers={logentries.INVOLVED: logentries.involved_key})


def _now():
    return datetime.datetime.now(datetime.timezone.utc)


def _instance():
    return '%s/%d' % (socket.gethostname(), os.getpid())


@errormap.translate
def system_events(systems, ident):
    """The Events System ``ident``'s log shows, oldest first."""
    vm = systems.find_vm(ident)
    namespace, _ = identity.key(vm)
    objects = logentries.system_objects(vm)
    found = []
    for name in sorted({name for _, name in objects}):
        found += systems.cluster.events(namespace, logentries.INVOLVED,
                                        '%s/%s' % (namespace, name))
    return logentries.visible(logentries.of_system(found, objects))


@errormap.translate
def clear_system(systems, ident, user):
    """Clear System ``ident``'s log: POST a marker Event about its VM."""
    vm = systems.find_vm(ident)
    namespace, name = identity.key(vm)
    involved = {'apiVersion': vm.get('apiVersion', 'kubevirt.io/v1'),
                'kind': 'VirtualMachine', 'name': name,
                'namespace': namespace, 'uid': vm['metadata'].get('uid')}
    systems.cluster.create_event(namespace, logentries.record(
        namespace, involved, logentries.CLEARED,
        'The log of System %s was cleared by %s' % (ident, user or
                                                    'anonymous'),
        _now(), instance=_instance()))


def _security(systems):
    return securitylog.shared(systems.cluster, systems.sessions().namespace)


@errormap.translate
def security_events(systems):
    """The records the security log shows, oldest first."""
    return logentries.visible(_security(systems).events())


@errormap.translate
def clear_security(systems, user):
    """Clear the security log: write its marker record."""
    _security(systems).write(logentries.CLEARED, 'The security log was '
                             'cleared by %s' % (user or 'anonymous'))
