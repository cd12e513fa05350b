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

"""Legacy discovery documents: /version, /api, /apis and resource lists.

Built from the store's resource types and the registered action
subresources (``sim.subresources``, keyed ``(group_version, plural,
action)``). A group or version with nothing served gives None.

The versions modelled: kube-apiserver 1.34 (``/version``), KubeVirt main
after v1.9.0 at d923fdb8 and CDI v1.66.0 at c07cdb6f, the commits of the
CRD schemas in ../shared/reference/crd-schemas. KubeVirt's version is
served where virt-api serves it, ``/apis/subresources.kubevirt.io/v1/
version``; CDI has no such endpoint.
"""

from sushy_kubevirt.simulator import reviews

VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch',
         'update', 'watch']
SUB_VERBS = ['get', 'patch', 'update']


KUBEVIRT_VERSION_PATH = '/apis/subresources.kubevirt.io/v1/version'
KUBEVIRT = {'gitVersion': 'v1.9.0-beta.0-1264-gd923fdb815',
            'gitCommit': 'd923fdb815cd2016ddaebdaaa51db04133576d72',
            'gitTreeState': 'clean', 'buildDate': '2026-08-22T10:34:54Z',
            'goVersion': 'go1.24.0', 'compiler': 'gc',
            'platform': 'linux/amd64'}
CDI = {'gitVersion': 'v1.66.0-6-gc07cdb6fb',
       'gitCommit': 'c07cdb6fbd18976c44f65f1e4c0deae03e33e718'}


def kubevirt_version():
    """virt-api's ``version`` document (kubevirt.io/client-go Info)."""
    return dict(KUBEVIRT)


def version():
    return {'major': '1', 'minor': '34', 'emulationMajor': '1',
            'emulationMinor': '34', 'gitVersion': 'v1.34.0-sushy-sim',
            'gitCommit': '0000000000000000000000000000000000000000',
            'gitTreeState': 'clean', 'buildDate': '2026-01-01T00:00:00Z',
            'goVersion': 'go1.24.0', 'compiler': 'gc',
            'platform': 'linux/amd64'}


def api_versions(host, port):
    """``/api``: the core group's versions."""
    return {'kind': 'APIVersions', 'versions': ['v1'],
            'serverAddressByClientCIDRs': [{
                'clientCIDR': '0.0.0.0/0',
                'serverAddress': '%s:%d' % (host, port)}]}


def group_list(store, subresources):
    return {'kind': 'APIGroupList', 'apiVersion': 'v1',
            'groups': [_group_doc(g, v) for g, v in
                       sorted(_group_versions(store, subresources).items())]}


def group(store, subresources, name):
    versions = _group_versions(store, subresources).get(name)
    if not versions:
        return None
    return dict(_group_doc(name, versions), kind='APIGroup',
                apiVersion='v1')


def resource_list(store, subresources, group, version):
    gv = '%s/%s' % (group, version) if group else version
    resources = []
    for rt in sorted(store.resources(), key=lambda r: r.plural):
        if rt.group != group or rt.version != version:
            continue
        entry = {'name': rt.plural, 'singularName': rt.singular,
                 'namespaced': rt.namespaced, 'kind': rt.kind,
                 'verbs': reviews.VERBS if reviews.is_review(rt) else VERBS}
        if rt.short_names:
            entry['shortNames'] = list(rt.short_names)
        resources.append(entry)
        if rt.status_subresource:
            resources.append({'name': rt.plural + '/status',
                              'singularName': '',
                              'namespaced': rt.namespaced,
                              'kind': rt.kind, 'verbs': SUB_VERBS})
    for key_gv, plural, action in sorted(subresources):
        if key_gv == gv:
            resources.append({'name': '%s/%s' % (plural, action),
                              'singularName': '', 'namespaced': True,
                              'kind': '', 'verbs': ['update']})
    if not resources:
        return None
    return {'kind': 'APIResourceList', 'apiVersion': 'v1',
            'groupVersion': gv, 'resources': resources}


def _group_versions(store, subresources):
    groups = {}
    for rt in store.resources():
        if rt.group:
            groups.setdefault(rt.group, set()).add(rt.version)
    for gv, _plural, _action in subresources:
        group, _, version = gv.partition('/')
        groups.setdefault(group, set()).add(version)
    return groups


def _group_doc(group, versions):
    entries = [{'groupVersion': '%s/%s' % (group, v), 'version': v}
               for v in sorted(versions)]
    return {'name': group, 'versions': entries,
            'preferredVersion': entries[0]}
