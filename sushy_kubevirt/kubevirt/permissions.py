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

"""What a Redfish request on a System needs, in Kubernetes RBAC terms.

The SubjectAccessReview attributes of a request when Kubernetes decides
who may do what: what ``kubectl`` or ``virtctl`` would need to do the
same to the VirtualMachine.

* any read: ``get virtualmachines`` (``kubevirt.io``);
* Reset: ``update virtualmachines/start``, ``/stop`` or ``/restart``
  (``subresources.kubevirt.io``), as ``virtctl start``, ``stop`` and
  ``restart``; PushPowerButton may do either of the first two;
* InsertMedia: ``create datavolumes`` (``cdi.kubevirt.io``) and ``patch
  virtualmachines``; EjectMedia: ``delete datavolumes`` and ``patch
  virtualmachines``;
* a tray's Certificates: POST ``create configmaps``, DELETE ``delete
  configmaps`` (core), the ConfigMap holding the CA;
* ClearLog: ``create events`` (core), the marker it writes;
* every other change (boot override, SecureBoot, BIOS, IndicatorLED, a
  tray's VerifyCertificate): ``patch virtualmachines``.

A namespace is reached when its VirtualMachines may be listed.
"""

from sushy_kubevirt.kubevirt import power

VIRT = 'kubevirt.io'
ACTIONS = 'subresources.kubevirt.io'
CDI = 'cdi.kubevirt.io'
VMS = 'virtualmachines'
#: ResetType -> the VM subresources it may call.
RESETS = {
    power.RESET_ON: ('start',), power.RESET_FORCE_ON: ('start',),
    power.RESET_FORCE_OFF: ('stop',),
    power.RESET_GRACEFUL_SHUTDOWN: ('stop',),
    power.RESET_GRACEFUL_RESTART: ('restart',),
    power.RESET_FORCE_RESTART: ('restart',),
    power.RESET_PUSH_POWER_BUTTON: ('start', 'stop'),
}
_MEDIA = {'VirtualMedia.InsertMedia': 'create',
          'VirtualMedia.EjectMedia': 'delete'}
_CERTIFICATES = {'POST': 'create', 'DELETE': 'delete'}


def _attributes(namespace, verb, group, resource, name=None,
                subresource=None):
    result = {'namespace': namespace, 'verb': verb, 'group': group,
              'resource': resource}
    if name:
        result['name'] = name
    if subresource:
        result['subresource'] = subresource
    return result


def reach(namespace):
    """What reaching the Systems of ``namespace`` needs."""
    return _attributes(namespace, 'list', VIRT, VMS)


def needs(method, rule, body, namespace, name):
    """What ``method`` on ``rule`` (a URL rule under a System) needs.

    :param body: the request's JSON body (for Reset's ResetType).
    :returns: the ``resourceAttributes`` that must all be allowed.
    """
    if method in ('GET', 'HEAD'):
        return [_attributes(namespace, 'get', VIRT, VMS, name)]
    action = rule.rpartition('/Actions/')[2] if '/Actions/' in rule \
        else None
    if action == power.RESET_ACTION:
        reset = body.get('ResetType') if isinstance(body, dict) else None
        return [_attributes(namespace, 'update', ACTIONS, VMS, name, sub)
                for sub in RESETS.get(reset, ())] or [
            _attributes(namespace, 'get', VIRT, VMS, name)]
    if action is None and '/Certificates' in rule and \
            method in _CERTIFICATES:
        return [_attributes(namespace, _CERTIFICATES[method], '',
                            'configmaps')]
    if action == 'LogService.ClearLog':
        return [_attributes(namespace, 'create', '', 'events')]
    patch = _attributes(namespace, 'patch', VIRT, VMS, name)
    if action in _MEDIA:
        return [_attributes(namespace, _MEDIA[action], CDI, 'datavolumes'),
                patch]
    return [patch]
