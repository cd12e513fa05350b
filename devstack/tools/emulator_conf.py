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

"""Extend the sushy-emulator config Ironic's devstack wrote.

Appends (or replaces, on a re-run) one marked block with the plugin hook
and the ``SUSHY_EMULATOR_KUBEVIRT_*`` keys; Ironic's own lines (feature
set, boot loader map) stay as they are. Values are written with ``repr``,
so any string is a valid Python literal in the (Python) config file.
"""

import argparse
import os
import sys

BEGIN = '# BEGIN sushy-kubevirt (devstack plugin)\n'
END = '# END sushy-kubevirt\n'


def block(args):
    settings = [
        ('SUSHY_EMULATOR_SYSTEMS_DRIVER', 'kubevirt'),
        ('SUSHY_EMULATOR_KUBEVIRT_KUBECONFIG', args.kubeconfig),
        ('SUSHY_EMULATOR_KUBEVIRT_NAMESPACES', [args.namespace]),
    ]
    if args.label_selector:
        settings.append(('SUSHY_EMULATOR_KUBEVIRT_LABEL_SELECTOR',
                         args.label_selector))
    if args.vmedia:
        settings.append(('SUSHY_EMULATOR_VMEDIA_DRIVER', 'kubevirt'))
        if args.storage_class:
            settings.append(('SUSHY_EMULATOR_KUBEVIRT_VMEDIA_STORAGE_CLASS',
                             args.storage_class))
    lines = [BEGIN, 'import sushy_kubevirt.plugin  # noqa: F401,E402\n']
    lines += ['%s = %r\n' % item for item in settings]
    return ''.join(lines + [END])


def without_block(text):
    start = text.find(BEGIN)
    if start < 0:
        return text
    end = text.find(END, start)
    end = len(text) if end < 0 else end + len(END)
    return text[:start] + text[end:]


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument('config', help='the emulator config file')
    parser.add_argument('--kubeconfig', required=True)
    parser.add_argument('--namespace', required=True)
    parser.add_argument('--label-selector', default='')
    parser.add_argument('--vmedia', choices=('True', 'False'),
                        default='True')
    parser.add_argument('--storage-class', default='')
    args = parser.parse_args(argv)
    args.vmedia = args.vmedia == 'True'
    return args


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    with open(args.config) as conf:
        text = without_block(conf.read())
    if text and not text.endswith('\n'):
        text += '\n'
    tmp = args.config + '.tmp'
    with open(tmp, 'w') as out:
        out.write(text + block(args))
    os.replace(tmp, args.config)
    print('sushy-kubevirt settings written to %s' % args.config)
    return 0


if __name__ == '__main__':
    sys.exit(main())
