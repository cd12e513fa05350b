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

"""Build kube-apiserver, kube-controller-manager and etcd from Go modules.

Two wrapper modules ship beside this file (``gomod/kube``, ``gomod/etcd``)
with a committed ``go.sum``: ``k8s.io/kubernetes`` pinned with every
``k8s.io/*`` staging module replaced by its tagged release (the kubernetes
module's own replace directives point into its source tree and do not
apply to a dependency), and a three-line ``main`` over etcd's ``etcdmain``.
The binaries go to a cache directory keyed by version
(``$SUSHY_KUBEVIRT_CACHE``, else ``$XDG_CACHE_HOME/sushy-kubevirt``, else
``~/.cache/sushy-kubevirt``); a second run reuses them.

``python -m sushy_kubevirt.controlplane.build`` builds and prints the
directory.
"""

import argparse
import fcntl
import os
import pathlib
import shutil
import subprocess
import sys
import time

KUBERNETES_VERSION = 'v1.34.4'
ETCD_VERSION = 'v3.6.16'
GOMOD = pathlib.Path(__file__).with_name('gomod')
KUBE_BINARIES = ('kube-apiserver', 'kube-controller-manager')


class BuildError(RuntimeError):
    """The binaries cannot be built here; the message says what to do."""


def cache_root():
    explicit = os.environ.get('SUSHY_KUBEVIRT_CACHE')
    if explicit:
        return pathlib.Path(explicit)
    base = os.environ.get('XDG_CACHE_HOME') or os.path.expanduser('~/.cache')
    return pathlib.Path(base) / 'sushy-kubevirt'


def bin_dir():
    """Where the binaries of the pinned versions live."""
    return (cache_root() / 'control-plane' /
            ('kubernetes-%s-etcd-%s' % (KUBERNETES_VERSION, ETCD_VERSION))
            / 'bin')


def binaries(directory=None):
    directory = pathlib.Path(directory or bin_dir())
    return {name: directory / name for name in KUBE_BINARIES + ('etcd',)}


def _go():
    go = shutil.which('go')
    if go is None:
        raise BuildError(
            'Go is not installed: building kube-apiserver, '
            'kube-controller-manager and etcd needs Go 1.24 or newer on '
            'PATH (e.g. "apt-get install golang-go", or the tarball from '
            'the Go project) and a reachable Go module proxy ($GOPROXY).')
    return go


def _run_go(go, args, cwd, env, log):
    proc = subprocess.run([go] + args, cwd=cwd, env=env, text=True,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    log.write(proc.stdout)
    if proc.returncode:
        tail = '\n'.join(proc.stdout.strip().splitlines()[-15:])
        hint = ''
        if any(word in proc.stdout for word in (
                'dial tcp', 'proxyconnect', 'no such host', 'i/o timeout',
                'connection refused', 'TLS handshake')):
            hint = ('\nThe Go module proxy is not reachable (GOPROXY=%s): '
                    'set GOPROXY to a reachable proxy, or fill the module '
                    'cache (go env GOMODCACHE) on a machine that has one.'
                    % env.get('GOPROXY', 'default'))
        raise BuildError('go %s failed in %s:\n%s%s'
                         % (' '.join(args), cwd, tail, hint))


def _ldflags():
    major, minor = KUBERNETES_VERSION.lstrip('v').split('.')[:2]
    pkg = 'k8s.io/component-base/version'
    return ' '.join(['-s', '-w'] + [
        '-X %s.%s=%s' % (pkg, key, value) for key, value in (
            ('gitVersion', KUBERNETES_VERSION), ('gitMajor', major),
            ('gitMinor', minor), ('gitTreeState', 'clean'))])


def ensure(log=None):
    """Build whatever binary is missing; return {name: path}.

    One build at a time per cache directory (a file lock): a second
    caller waits for the first and then finds the binaries.
    """
    paths = binaries()
    if all(path.exists() for path in paths.values()):
        return paths
    go = _go()
    out = bin_dir()
    out.mkdir(parents=True, exist_ok=True)
    with open(out.parent / 'build.lock', 'w') as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        _build(go, out, paths, log or sys.stderr)
    return paths


def _build(go, out, paths, log):
    """Build into a staging directory, then rename into ``out``.

    A reader never sees a half-written binary.
    """
    missing = [name for name, path in paths.items() if not path.exists()]
    work = out.parent / 'src'
    staging = out.parent / 'staging'
    staging.mkdir(exist_ok=True)
    env = dict(os.environ, CGO_ENABLED='0', GOFLAGS='-mod=readonly')
    for module in ('kube', 'etcd'):
        shutil.copytree(GOMOD / module, work / module, dirs_exist_ok=True)
    if set(missing) & set(KUBE_BINARIES):
        _run_go(go, ['build', '-trimpath', '-ldflags', _ldflags(), '-o',
                     str(staging) + os.sep] +
                ['k8s.io/kubernetes/cmd/%s' % name for name in KUBE_BINARIES],
                work / 'kube', env, log)
    if 'etcd' in missing:
        _run_go(go, ['build', '-trimpath', '-ldflags', '-s -w', '-o',
                     str(staging / 'etcd'), '.'], work / 'etcd', env, log)
    for name in missing:
        os.replace(staging / name, paths[name])


def main(argv=None):
    parser = argparse.ArgumentParser(
        prog='python -m sushy_kubevirt.controlplane.build',
        description='Build kube-apiserver %s, kube-controller-manager and '
        'etcd %s into %s (reused when present).'
        % (KUBERNETES_VERSION, ETCD_VERSION, bin_dir()))
    parser.add_argument('--kubevirt', action='store_true',
                        help='also build KubeVirt and CDI from their '
                        'release sources (controlplane.upstream)')
    args = parser.parse_args(argv)
    started = time.monotonic()
    try:
        paths = ensure()
        print('%s (%.0f s)' % (bin_dir(), time.monotonic() - started))
        if args.kubevirt:
            from sushy_kubevirt.controlplane import upstream
            for project in upstream.PROJECTS:
                started = time.monotonic()
                paths.update(upstream.ensure(project))
                print('%s (%.0f s)' % (project.bin_dir(project.source()),
                                       time.monotonic() - started))
    except BuildError as exc:
        sys.exit('error: %s' % exc)
    return paths


if __name__ == '__main__':
    main()
