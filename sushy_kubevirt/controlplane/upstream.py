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

"""Build KubeVirt's and CDI's control-plane binaries from their sources.

KubeVirt and CDI are not served by the Go module proxy; their release
sources, with ``vendor/``, build offline. Each source is a release archive
(``kubevirt-v1.9.0.tar.zst``, ``cdi-v1.66.0.tar.zst``) in the directory
``$SUSHY_KUBEVIRT_UPSTREAM`` (default ``../shared/upstream``), or, to
build one's own checkout, ``$SUSHY_KUBEVIRT_KUBEVIRT_SOURCE`` /
``$SUSHY_KUBEVIRT_CDI_SOURCE`` naming an archive or a source directory.

An archive's binaries go to the cache (``build.cache_root()``) under its
sha256, so a second run reuses them; a directory is rebuilt every time
(Go's build cache makes that seconds). Built:

* KubeVirt: ``virt-api``, ``virt-controller``, ``virt-operator`` (it dumps
  the install strategy) and ``resource-generator`` (the ``KubeVirt`` CRD,
  which the install strategy does not carry);
* CDI: ``cdi-controller``, ``cdi-apiserver`` and ``cdi-manifests``, a
  dump of CDI operator's own resource factories (``gomod/cdi-manifests``,
  laid into CDI's source tree by a ``go build -overlay``).
"""

import fcntl
import hashlib
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

from sushy_kubevirt.controlplane import build

UPSTREAM_ENV = 'SUSHY_KUBEVIRT_UPSTREAM'
DEFAULT_UPSTREAM = os.path.join('..', 'shared', 'upstream')
GOMOD = pathlib.Path(__file__).with_name('gomod')


class Project:
    """One upstream project: where its source is and what to build."""

    def __init__(self, name, archive, packages, env, version_pkg=None):
        #: short name: ``kubevirt`` or ``cdi``
        self.name = name
        #: the release archive's file name in the upstream directory
        self.archive = archive
        #: {binary: Go package path} built from the source tree
        self.packages = packages
        #: extra environment of ``go build``
        self.env = env
        #: the package whose ``gitVersion`` the build stamps
        self.version_pkg = version_pkg

    @property
    def version(self):
        return re.search(r'-(v[0-9][^/]*?)\.tar', self.archive).group(1)

    def source(self):
        """The archive or directory to build from; raise if missing."""
        own = os.environ.get('SUSHY_KUBEVIRT_%s_SOURCE' % self.name.upper())
        path = pathlib.Path(own or os.path.join(
            os.environ.get(UPSTREAM_ENV, DEFAULT_UPSTREAM), self.archive))
        if not path.exists():
            raise build.BuildError(
                '%s source not found at %s: set $%s to the directory '
                'holding %s, or $SUSHY_KUBEVIRT_%s_SOURCE to an archive or '
                'a source checkout with vendor/'
                % (self.name, path, UPSTREAM_ENV, self.archive,
                   self.name.upper()))
        return path.resolve()

    def bin_dir(self, source):
        if source.is_dir():
            key = hashlib.sha256(str(source).encode()).hexdigest()[:16]
            return build.cache_root() / 'upstream' / ('%s-dir-%s' % (
                self.name, key)) / 'bin'
        return build.cache_root() / 'upstream' / (
            '%s-%s' % (self.name, sha256(source)[:16])) / 'bin'

    def ldflags(self):
        flags = ['-s', '-w']
        if self.version_pkg:
            flags += ['-X %s.gitVersion=%s' % (self.version_pkg, self.version),
                      '-X %s.gitTreeState=clean' % self.version_pkg]
        return ' '.join(flags)


KUBEVIRT = Project(
    'kubevirt', 'kubevirt-v1.9.0.tar.zst',
    {'virt-api': './cmd/virt-api',
     'virt-controller': './cmd/virt-controller',
     'virt-operator': './cmd/virt-operator',
     'resource-generator': './tools/resource-generator'},
    {'GOFLAGS': '-mod=vendor -tags=selinux'},
    version_pkg='kubevirt.io/client-go/version')
CDI = Project(
    'cdi', 'cdi-v1.66.0.tar.zst',
    {'cdi-controller': './cmd/cdi-controller',
     'cdi-apiserver': './cmd/cdi-apiserver',
     'cdi-manifests': './cmd/cdi-manifests'},
    {'GOFLAGS': '-mod=vendor', 'GOWORK': 'off'})
PROJECTS = (KUBEVIRT, CDI)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, 'rb') as stream:
        for chunk in iter(lambda: stream.read(1 << 20), b''):
            digest.update(chunk)
    return digest.hexdigest()


def _extract(archive, dest):
    """Unpack a ``.tar.zst`` with zstd, else the ``zstandard`` module."""
    dest.mkdir(parents=True)
    zstd = shutil.which('zstd')
    if zstd:
        unpack = subprocess.Popen([zstd, '-dc', str(archive)],
                                  stdout=subprocess.PIPE)
        subprocess.run(['tar', '-x', '-C', str(dest)], stdin=unpack.stdout,
                       check=True)
        if unpack.wait():
            raise build.BuildError('zstd could not read %s' % archive)
        return
    try:
        import zstandard
    except ImportError:
        raise build.BuildError(
            'unpacking %s needs the zstd command or the zstandard Python '
            'package (pip install zstandard)' % archive)
    import tarfile
    with open(archive, 'rb') as raw, \
            zstandard.ZstdDecompressor().stream_reader(raw) as stream, \
            tarfile.open(fileobj=stream, mode='r|') as tar:
        tar.extractall(dest, filter='data')


def binaries(project):
    source = project.source()
    out = project.bin_dir(source)
    return {name: out / name for name in project.packages}


def ensure(project, log=None):
    """Build ``project``'s missing binaries; return {name: path}."""
    log = log or sys.stderr
    source = project.source()
    out = project.bin_dir(source)
    paths = {name: out / name for name in project.packages}
    if not source.is_dir() and all(p.exists() for p in paths.values()):
        return paths
    go = build._go()
    out.mkdir(parents=True, exist_ok=True)
    with open(out.parent / 'build.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if source.is_dir() or not all(p.exists() for p in paths.values()):
            _build(go, project, source, out, paths, log)
    return paths


def _build(go, project, source, out, paths, log):
    tree = source
    if not source.is_dir():
        tree = out.parent / 'src'
        if not (tree / 'go.mod').exists():
            shutil.rmtree(tree, ignore_errors=True)
            log.write('unpacking %s\n' % source)
            _extract(source, tree)
    staging = out.parent / 'staging'
    staging.mkdir(exist_ok=True)
    args = ['build', '-trimpath', '-ldflags', project.ldflags()]
    if project is CDI:
        # The dumper joins CDI's tree without being written into it.
        overlay = out.parent / 'overlay.json'
        overlay.write_text(json.dumps({'Replace': {
            str(tree / 'cmd' / 'cdi-manifests' / 'main.go'):
            str(GOMOD / 'cdi-manifests' / 'main.go')}}))
        args += ['-overlay', str(overlay)]
    env = dict(os.environ, CGO_ENABLED='0', GOPROXY='off', **project.env)
    log.write('building %s from %s\n' % (', '.join(paths), source))
    build._run_go(go, args + ['-o', str(staging) + os.sep] +
                  list(project.packages.values()), tree, env, log)
    for name, path in paths.items():
        os.replace(staging / name, path)


def ensure_all(log=None):
    """Build every project; return {name: path} of all their binaries."""
    paths = {}
    for project in PROJECTS:
        paths.update(ensure(project, log))
    return paths
