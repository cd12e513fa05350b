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

"""The fake driver and the ceiling on waitress, as the ``devserver`` mode.

``sushy-kubevirt-emulator`` serves with waitress; beside it, in the
``devserver`` mode, sushy-tools' fake driver and the ceiling run on
waitress too, with the console script's default threads and timeouts and
a logged line per answer, so that a ratio compares applications, not
servers:

* ``python -m sushy_kubevirt.bench.waitressed CONFIG PORT``:
  ``sushy-emulator --fake`` (sushy-tools' own ``main``; this project's
  plugin, which the console script's module imports, is not);
* the app of :mod:`.ceiling`, through :func:`serve`.
"""

import logging
import sys
import time

import waitress

#: ``sushy-kubevirt-emulator``'s default threads (the EventService's 16
#: Server-Sent Event streams + 16) and request timeout; the emulator side
#: is given the same ``--threads``.
THREADS = 32
REQUEST_TIMEOUT = 10
LOG = logging.getLogger('sushy_kubevirt.bench.waitressed')


def _logged(app):
    """``app`` logging a line per answer, as the console script does."""
    def logged(environ, start_response):
        def start(status, headers, exc_info=None):
            size = next((value for name, value in headers
                         if name.lower() == 'content-length'), '-')
            LOG.info('%s - - [%s] "%s %s %s" %s %s', environ['REMOTE_ADDR'],
                     time.strftime('%d/%b/%Y %H:%M:%S'),
                     environ['REQUEST_METHOD'], environ['REQUEST_URI'],
                     environ['SERVER_PROTOCOL'], status.split(' ', 1)[0],
                     size)
            return start_response(status, headers, exc_info)
        return app(environ, start)
    return logged


def serve(app, host, port):
    """Serve ``app`` on waitress until the process ends."""
    logging.basicConfig(level=logging.INFO, format='%(message)s')
    waitress.serve(_logged(app), host=host, port=port, threads=THREADS,
                   channel_timeout=REQUEST_TIMEOUT, cleanup_interval=1,
                   asyncore_use_poll=True,
                   clear_untrusted_proxy_headers=False)


def main(argv=None):
    """``CONFIG PORT``: run ``sushy-emulator --fake``, served by waitress."""
    config_path, port = (argv or sys.argv[1:])[:2]
    # Here only: importing it builds sushy-tools' app.
    from sushy_tools.emulator import main as emulator

    def run(host=None, port=None, **kwargs):
        serve(emulator.app, host, port)
    emulator.app.run = run
    sys.argv = ['sushy-emulator', '--fake', '--config', config_path,
                '--interface', '127.0.0.1', '--port', port]
    return emulator.main()


if __name__ == '__main__':
    sys.exit(main())
