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

"""Files other processes read, written whole or not at all.

A kubeconfig, a certificate or a configuration file written in place
(truncated, then written) can be read empty or half written by the
process it is for; :func:`replace` writes a temporary file in the same
directory and renames it over the target, so a reader sees the old file
or the new one.
"""

import contextlib
import os
import tempfile


def replace(path, data, mode=0o644):
    """Write ``data`` (str or bytes) to ``path`` in one step.

    :param mode: the file's permission bits (a new file and a replaced
        one alike; the umask does not apply).
    :returns: ``path`` as a string.
    """
    path = os.fspath(path)
    fd, temporary = tempfile.mkstemp(
        dir=os.path.dirname(path) or '.',
        prefix='.%s.' % os.path.basename(path))
    try:
        with os.fdopen(fd, 'wb') as stream:
            os.fchmod(stream.fileno(), mode)
            stream.write(data.encode() if isinstance(data, str) else data)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return path
