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

"""Extract Ironic's Redfish interop profile from an ironic sdist.

``python -m tests.functional.conformance.profile SDIST_DIR DEST`` writes
the newest ``redfish-interop-profiles/OpenStackIronicProfile.v*.json``
found in the ``ironic-*.tar.gz`` files of SDIST_DIR (fetched from PyPI
with ``pip download ironic --no-deps --no-binary :all:``) to DEST.
"""

import glob
import os
import re
import sys
import tarfile

_PROFILE = re.compile(
    r'^[^/]+/redfish-interop-profiles/'
    r'OpenStackIronicProfile\.v(\d+)_(\d+)_(\d+)\.json$')


def newest_profile(tar):
    """The member name of the newest profile in ``tar``, or None."""
    found = [(tuple(map(int, m.groups())), name) for name, m in
             ((n, _PROFILE.match(n)) for n in tar.getnames()) if m]
    return max(found)[1] if found else None


def main(sdist_dir, dest):
    for path in sorted(glob.glob(os.path.join(sdist_dir,
                                              'ironic-*.tar.gz'))):
        with tarfile.open(path) as tar:
            name = newest_profile(tar)
            if name:
                with open(dest, 'wb') as out:
                    out.write(tar.extractfile(name).read())
                print('%s from %s' % (os.path.basename(name), path))
                return 0
    print('no OpenStackIronicProfile in %s' % sdist_dir)
    return 1


if __name__ == '__main__':
    sys.exit(main(*sys.argv[1:]))
