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

"""DMTF's Protocol Validator and Use Case Checkers against HTTPS gunicorn.

:func:`self_signed` writes a certificate for 127.0.0.1 (``cryptography``);
:func:`tls_emulator` runs gunicorn 2 workers x 2 threads with it (and
an access log :func:`access_log` reads); :func:`protocol_validator` and
:func:`use_case_checkers` run the tools as subprocesses and return a
:data:`Report` of their results.
"""

import collections
import contextlib
import csv
import datetime
import glob
import ipaddress
import os
import re
import subprocess

import requests
from tests.functional.emulator import harness

#: Every result row: ``(check, uri, result, message)``.
Row = collections.namedtuple('Row', 'check uri result message')
Report = collections.namedtuple('Report', 'rows counts')
#: One answer of gunicorn's access log (:data:`ACCESS_FORMAT`).
Access = collections.namedtuple('Access', 'status method path agent')
ACCESS_FORMAT = '%(s)s %(m)s "%(U)s" "%(a)s"'
_ACCESS = re.compile(r'^(\d{3}) (\S+) "([^"]*)" "(.*)"$')
TIMEOUT = 300
_ANSI = re.compile(r'\x1b\[[0-9;]*m')
_USE_CASE = re.compile(r'Failing the (.*) test\.\.\.$')


def self_signed(directory):
    """``(cert, key)`` paths of a fresh self-signed cert for 127.0.0.1."""
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives import serialization
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, '127.0.0.1')])
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address('127.0.0.1'))]),
                critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None),
                           critical=True)
            .sign(key, hashes.SHA256()))
    cert_path = os.path.join(directory, 'cert.pem')
    key_path = os.path.join(directory, 'key.pem')
    with open(cert_path, 'wb') as out:
        out.write(cert.public_bytes(serialization.Encoding.PEM))
    with open(key_path, 'wb') as out:
        out.write(key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
    return cert_path, key_path


@contextlib.contextmanager
def tls_emulator(config, tmp_path, access=None):
    """gunicorn 2x2 over HTTPS on ``config``; yields ``(url, cert)``.

    :param access: a path for gunicorn's access log, else none.
    """
    cert, key = self_signed(str(tmp_path))
    process = harness.emulator_process('gunicorn', config, tmp_path)
    process.argv += ['--certfile', cert, '--keyfile', key]
    if access:
        process.argv += ['--access-logfile', str(access),
                         '--access-logformat', ACCESS_FORMAT]
    process.url = process.url.replace('http:', 'https:', 1)
    process.start()
    try:
        def ready():
            if process.proc.poll() is not None:
                raise AssertionError('gunicorn exited:\n' + process.log())
            try:
                return requests.get(process.url + '/redfish/v1/', timeout=5,
                                    verify=cert).ok
            except requests.RequestException:
                return False
        harness.wait_until(ready, harness.READY_TIMEOUT, 0.2,
                           'HTTPS emulator ready')
        yield process.url, cert
    finally:
        process.stop()


def access_log(path):
    """The :data:`Access` answers of gunicorn's access log at ``path``."""
    with open(path, errors='replace') as log:
        return [Access(int(m.group(1)), *m.groups()[1:]) for m in (
            _ACCESS.match(line.rstrip('\n')) for line in log) if m]


def _run(argv, env=None):
    return subprocess.run(argv, capture_output=True, text=True,
                          timeout=TIMEOUT, stdin=subprocess.DEVNULL,
                          env=dict(os.environ, **(env or {})))


def protocol_validator(tool, url, user, password, cert, report_dir):
    """The :data:`Report` of ``rf_protocol_validator`` (its TSV report).

    ``--ca-bundle`` trusts ``cert``; so does ``REQUESTS_CA_BUNDLE``, which
    requests prefers to a session's own ``verify`` (the tool uses both).
    """
    result = _run([tool, '--rhost', url, '--user', user, '--password',
                   password, '--ca-bundle', cert, '--avoid-http-redirect',
                   '--report-dir', str(report_dir), '--report-type', 'tsv'],
                  env={'REQUESTS_CA_BUNDLE': cert})
    found = glob.glob(os.path.join(str(report_dir), '**', '*.tsv'),
                      recursive=True)
    if not found:
        raise AssertionError('rf_protocol_validator wrote no report (exit '
                             '%s):\n%s%s' % (result.returncode,
                                             result.stdout[-3000:],
                                             result.stderr[-3000:]))
    with open(found[0], encoding='utf-8', newline='') as tsv:
        rows = [Row(r['Assertion'], r['URI'], r['Result'], r['Message'])
                for r in csv.DictReader(tsv, delimiter='\t',
                                        quoting=csv.QUOTE_NONE)]
    return Report(rows, collections.Counter(r.result for r in rows))


def use_case_checkers(tool, url, user, password, report_dir, tests):
    """The :data:`Report` of ``rf_use_case_checkers`` for ``tests``.

    Counts from its summary table; a FAIL row per failed check, with the
    message its debug log gives next.
    """
    result = _run([tool, '--rhost', url, '--user', user, '--password',
                   password, '--report-dir', str(report_dir),
                   '--test-list'] + list(tests))
    out = _ANSI.sub('', result.stdout)
    table = [line for line in out.splitlines() if line.startswith('|')]
    if len(table) < 2:
        raise AssertionError('rf_use_case_checkers printed no summary (exit '
                             '%s):\n%s%s' % (result.returncode, out[-3000:],
                                             result.stderr[-3000:]))
    names = [c.strip() for c in table[0].strip('|').split('|')]
    values = [int(c) for c in table[1].strip('|').split('|')]
    rows = []
    for log in glob.glob(os.path.join(str(report_dir), '*', '*.log')):
        with open(log, errors='replace') as text:
            lines = [line.rstrip() for line in text]
        for index, line in enumerate(lines):
            match = _USE_CASE.search(line)
            if match:
                rows.append(Row(match.group(1), '', 'FAIL',
                                lines[index + 1] if index + 1 < len(lines)
                                else ''))
    return Report(rows, collections.Counter(dict(zip(names, values))))


def failures(report):
    """One line per FAIL row, for assertion messages."""
    return '\n'.join('%s %s %s' % (r.check, r.uri, r.message[:200])
                     for r in report.rows if r.result == 'FAIL')
