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

"""Helpers for the simulator's API tests: a test resource, raw requests
and connections, NDJSON watch reading, the CRD schema directory."""

import http.client
import json
import os
import socket
import ssl

import pytest

from sushy_kubevirt import simulator
from sushy_kubevirt.simulator import schemas
from sushy_kubevirt.simulator import storage

REPO_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))))

WIDGETS = storage.ResourceType('sim.example.com', 'v1', 'widgets',
                               'Widget', short_names=('wd',))
GROUP, VERSION, PLURAL = WIDGETS.group, WIDGETS.version, WIDGETS.plural

DEFAULTS = dict(history_size=50, bookmark_interval=0.2,
                min_request_timeout=1.0, too_large_wait=0.5)


def tls_context(sim):
    """A client ``SSLContext`` trusting ``sim``'s CA; None if plain HTTP."""
    return sim.ca_file and ssl.create_default_context(cafile=sim.ca_file)


def connect(sim, timeout=None):
    """A socket to ``sim``'s API server (TLS unless it serves plain HTTP)."""
    sock = socket.create_connection(('127.0.0.1', sim.port), timeout)
    context = tls_context(sim)
    if context is None:
        return sock
    return context.wrap_socket(sock, server_hostname='127.0.0.1')


def http_connection(sim, timeout=5):
    """An ``http.client`` connection to ``sim``'s API server."""
    context = tls_context(sim)
    if context is None:
        return http.client.HTTPConnection('127.0.0.1', sim.port,
                                          timeout=timeout)
    return http.client.HTTPSConnection('127.0.0.1', sim.port,
                                       timeout=timeout, context=context)


def widget(name, namespace='default', labels=None, spec=None):
    """A Widget body."""
    meta = {'name': name, 'namespace': namespace}
    if labels:
        meta['labels'] = labels
    return {'apiVersion': 'sim.example.com/v1', 'kind': 'Widget',
            'metadata': meta, 'spec': spec or {'size': 1}}


def create(custom, name, namespace='default', **kwargs):
    return custom.create_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, widget(name, namespace, **kwargs))


def ensure_namespace(sim, name):
    if sim.store.try_get(simulator.NAMESPACES, None, name) is None:
        sim.store.create(simulator.NAMESPACES, {'metadata': {'name': name}})


def body(exc):
    """The JSON body of an ApiException."""
    return json.loads(exc.body)


def watch_lines(custom, namespace='default', timeout=5, **params):
    """Open a raw watch; return the urllib3 response (not preloaded)."""
    if namespace is None:
        return custom.list_cluster_custom_object(
            GROUP, VERSION, PLURAL, watch=True, _preload_content=False,
            _request_timeout=timeout, **params)
    return custom.list_namespaced_custom_object(
        GROUP, VERSION, namespace, PLURAL, watch=True,
        _preload_content=False, _request_timeout=timeout, **params)


def read_events(resp, limit=None, until=None):
    """Decode NDJSON events until EOF, ``limit`` or ``until(event)``."""
    events = []
    buffer = b''
    for chunk in resp.stream(amt=None, decode_content=False):
        buffer += chunk
        while b'\n' in buffer:
            line, buffer = buffer.split(b'\n', 1)
            if line.strip():
                events.append(json.loads(line))
                if (limit is not None and len(events) >= limit
                        or until is not None and until(events[-1])):
                    resp.close()
                    return events
    return events


def raw(api_client, method, path, body=None, headers=None, query=None,
        auth=True):
    """A raw request through ApiClient.param_serialize/call_api.

    Returns ``(status, headers, data bytes)``; never raises on HTTP codes.
    """
    headers = dict({'Accept': 'application/json'}, **(headers or {}))
    if body is not None:
        headers.setdefault('Content-Type', 'application/json')
    method, url, headers, body, post = api_client.param_serialize(
        method, path, query_params=list((query or {}).items()),
        header_params=headers, body=body,
        auth_settings=['BearerToken'] if auth else [])
    resp = api_client.call_api(method, url, headers, body, post)
    resp.read()
    return resp.status, resp.getheaders(), resp.data


def call(api_client, method, path, body=None, **query):
    """``raw`` with JSON in and out (PATCH: a merge patch)."""
    headers = {'Content-Type': 'application/merge-patch+json'} \
        if method == 'PATCH' else None
    status, _headers, data = raw(api_client, method, path, body, headers,
                                 query)
    return status, json.loads(data) if data else None


def crd_schema_dir():
    """The CRD schema directory for tests, or skip (fail when CI=true).

    ``$SUSHY_KUBEVIRT_SIMULATOR_CRD_SCHEMAS``, else
    ``../shared/reference/crd-schemas`` next to the repository root.
    """
    path = os.environ.get(schemas.ENV) or os.path.join(
        REPO_ROOT, '..', 'shared', 'reference', 'crd-schemas')
    if os.path.isdir(path):
        return os.path.abspath(path)
    reason = ('no CRD schema directory at %s: set $%s to one (see '
              'doc/source/simulator.rst, "Schemas and CSDL files")'
              % (path, schemas.ENV))
    if os.environ.get('CI', '').lower() == 'true':
        pytest.fail(reason)
    pytest.skip(reason)
