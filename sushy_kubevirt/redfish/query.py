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

"""Redfish query parameters on every GET of a plugin driver (DSP0266).

``only``, ``$skip``/``$top`` (with ``Members@odata.nextLink``),
``$expand`` (``*``, ``.``, ``~``, ``($levels=n)`` up to
:data:`MAX_LEVELS`) and ``$select``, applied in that order to the JSON
the route answers, as :data:`FEATURES` advertises in the service root.
``$expand`` and ``only`` fetch each member by running its own route
within the request (the same handlers, privileges and watch cache: no
Kubernetes call). Another parameter starting with ``$`` is a 501
``QueryNotSupported``; a malformed value a 400. Unknown parameters
without ``$`` are ignored.

An ``$expand`` takes a slot of :data:`EXPANSIONS` (a 503 past them), and
estimates what it would fetch from one sample resource per URL rule
before fetching the rest: past :data:`MAX_EXPANDED` it is a 400 at about
the cost of the GET alone. How the bound is decided: the links of the
answer, grouped by URL rule, are the first level; the links of one
sample resource of each rule, times that rule's count, the next. The
sample System of each ``$expand`` mode is remembered
(:data:`SAMPLED`, with its ETag), so that an ``$expand`` of the Systems
collection of more than one level is decided before the collection is
even rendered (:mod:`.expandbound`: its size from the watch cache,
times the links of the sample while its ETag holds); the refusal then
costs about a warm System GET.

An answer a query changed is another representation: under a System its
ETag is the System's with a suffix naming the query; an ``$expand``
answer, which may hold other resources, carries none.
"""

import functools
import hashlib
import json
import re
import urllib.parse
import weakref

import flask
from werkzeug import exceptions

from sushy_kubevirt import messages
from sushy_kubevirt.redfish import auth
from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import capacity

MAX_LEVELS = 3
#: Resources one ``$expand`` may fetch.
MAX_EXPANDED = 1000
#: ``$expand`` requests: 2 at once per process, 1 per account, 4 more
#: waiting up to 10 s.
EXPANSIONS = capacity.Limit('expansions ($expand)', 2, 1, waiting=4,
                            wait=10.0, retry_after=2, brief=True)
FEATURES = {
    'ExcerptQuery': False,
    'ExpandQuery': {'ExpandAll': True, 'Levels': True, 'Links': True,
                    'NoLinks': True, 'MaxLevels': MAX_LEVELS},
    'FilterQuery': False,
    'OnlyMemberQuery': True,
    'SelectQuery': True,
    'TopSkipQuery': True,
}
_SUPPORTED = ('$select', '$expand', '$top', '$skip')
_EXPAND = re.compile(r'^([*.~])(?:\(\$levels=([0-9]{1,9})\))?$')
_SELECT = re.compile(r'^[A-Za-z0-9_@#.]+(?:/[A-Za-z0-9_@#.]+)*$')
#: ``$skip``/``$top``: ASCII digits (``str.isdigit`` also takes ``²``).
_NUMBER = re.compile(r'[0-9]+')
_MAX_DIGITS = 9
_KEY = 'sushy_kubevirt.query'
_SLOT = 'sushy_kubevirt.expansion'
_ENVIRON = (auth.USER_KEY, auth.ACCOUNT_KEY, 'HTTP_X_USER', 'REMOTE_ADDR')
_REDIRECTS = 2
#: The URL rule of a System.
SYSTEM_RULE = '/redfish/v1/Systems/<identity>'
#: systems driver -> {``$expand`` mode: (System id, its ETag, how many
#: of its links the mode expands)}: the last System sampled.
SAMPLED = weakref.WeakKeyDictionary()
#: URL rules that read their own query parameters.
_EXEMPT = set()


def exempt(rule):
    """Leave the query parameters of URL rule ``rule`` to its route."""
    _EXEMPT.add(rule)


def _format_error(value, name):
    return messages.RedfishError('QueryParameterValueFormatError', value,
                                 name)


def _number(args, name):
    value = args.get(name)
    if value is None:
        return None
    if not _NUMBER.fullmatch(value):
        raise messages.RedfishError('QueryParameterValueTypeError', value,
                                    name, detail='%s must be a whole number '
                                    'in ASCII digits' % name)
    if len(value) > _MAX_DIGITS:
        raise messages.RedfishError('QueryParameterOutOfRange', value, name,
                                    'at most %d digits' % _MAX_DIGITS)
    return int(value)


def _parse(args):
    for name in args:
        if name.startswith('$') and name not in _SUPPORTED:
            raise messages.RedfishError(
                'QueryNotSupported', code=501,
                detail='Query parameter %s is not supported; this service '
                'supports %s and only' % (name, ', '.join(_SUPPORTED)))
    query = {}
    if 'only' in args:
        if args['only']:
            raise _format_error(args['only'], 'only')
        query['only'] = True
    for name in ('$skip', '$top'):
        if name in args:
            query[name] = _number(args, name)
    if query.get('$top') == 0:
        raise messages.RedfishError('QueryParameterOutOfRange', '0', '$top',
                                    '1 or more')
    if '$expand' in args:
        found = _EXPAND.match(args['$expand'])
        if found is None:
            raise _format_error(args['$expand'], '$expand')
        levels = int(found.group(2) or 1)
        if not 1 <= levels <= MAX_LEVELS:
            raise messages.RedfishError(
                'QueryParameterOutOfRange', args['$expand'], '$expand',
                '$levels 1-%d' % MAX_LEVELS)
        query['$expand'] = (found.group(1), levels)
    if '$select' in args:
        paths = args['$select'].split(',')
        if not all(_SELECT.match(path.strip()) for path in paths):
            raise _format_error(args['$select'], '$select')
        query['$select'] = [path.strip() for path in paths]
    return query


def expansion(value):
    """``(mode, levels)`` of a valid ``$expand`` value, else None."""
    found = _EXPAND.match(value)
    levels = int(found.group(2) or 1) if found else 0
    return (found.group(1), levels) if 1 <= levels <= MAX_LEVELS else None


def refusal(value):
    """The 400 of an ``$expand`` past :data:`MAX_EXPANDED`."""
    return messages.RedfishError(
        'QueryParameterOutOfRange', value, '$expand',
        'at most %d resources' % MAX_EXPANDED)


def _current():
    if not flask.has_request_context():
        return None
    return flask.request.environ.get(_KEY)


def check(app, **view_args):
    """A ``before`` handler: parse the query of a GET, or refuse it."""
    request = flask.request
    if not base.plugin_driver(app) or request.method not in ('GET', 'HEAD') \
            or not request.environ.get('QUERY_STRING') or not request.args \
            or (request.url_rule is not None
                and request.url_rule.rule in _EXEMPT):
        return None
    query = _parse(request.args)
    if query:
        request.environ[_KEY] = query
    if '$expand' in query:
        user = request.environ.get(auth.USER_KEY)
        EXPANSIONS.acquire(user, capacity.server_threads(request.environ))
        request.environ[_SLOT] = lambda: EXPANSIONS.release(user)
    return None


def _release(app, **extra):
    """Give back this request's slot of :data:`EXPANSIONS`, if it took one."""
    release = flask.request.environ.pop(_SLOT, None)
    if release is not None:
        release()


flask.request_tearing_down.connect(_release, weak=False)


def etag(current):
    """The ETag of this request's answer, the resource's being ``current``.

    None when the answer has no ETag of its own (an ``$expand``).
    """
    query = _current()
    if not query:
        return current
    if '$expand' in query:
        return None
    suffix = hashlib.sha256(flask.request.query_string).hexdigest()[:12]
    weak, _, tag = current.rpartition('"')[0].partition('"')
    return '%s"%s.%s"' % (weak, tag, suffix)


def _fetch(app, path):
    """The JSON body of GET ``path`` as this request's account sees it."""
    return _fetched(app, path)[0]


def _fetched(app, path):
    """:func:`_fetch`'s body, and the answer's ETag."""
    outer = flask.request.environ
    for _ in range(_REDIRECTS + 1):
        if outer.get(auth.USER_KEY) is None:
            # Not authenticated: through the authentication middleware.
            response = app.test_client().get(path, environ_base={
                'REMOTE_ADDR': outer.get('REMOTE_ADDR', '')})
        else:
            with app.test_request_context(path, environ_base={
                    key: outer[key] for key in _ENVIRON if key in outer}):
                response = app.full_dispatch_request()
        if response.status_code not in (301, 302, 307, 308):
            break
        path = urllib.parse.urlsplit(response.headers['Location']).path
    if response.status_code != 200 or response.mimetype != \
            'application/json':
        return None, None
    try:
        return json.loads(response.get_data()), response.headers.get('ETag')
    except ValueError:
        return None, None


def _link(value):
    """The URI ``value`` references, when it is only a reference."""
    if isinstance(value, dict) and list(value) == ['@odata.id']:
        uri = value['@odata.id']
        if isinstance(uri, str) and uri.startswith('/redfish/v1/') and \
                '#' not in uri and uri != '/redfish/v1/$metadata':
            return uri
    return None


@functools.lru_cache(maxsize=16384)
def _rule(url_map, uri):
    """The URL rule of ``uri`` (``uri`` itself when none matches)."""
    try:
        return url_map.bind('localhost').match(
            uri, method='GET', return_rule=True)[0].rule
    except exceptions.HTTPException:
        return uri


class _Expander:
    """Expands links level by level, after estimating how many there are.

    The estimate takes each level's links by URL rule and one sample
    resource of each rule: its links, times that rule's count, are the
    next level's. Samples are fetched once and reused.
    """

    def __init__(self, app, mode):
        self.app, self.mode, self.fetched, self.samples = app, mode, 0, {}

    def _refuse(self):
        return refusal(flask.request.args['$expand'])

    def links(self, body):
        """``(holder, key, uri)`` of each link of ``body`` to expand."""
        found = []

        def walk(value, in_links):
            pairs = value.items() if isinstance(value, dict) \
                else enumerate(value)
            for key, item in pairs:
                if isinstance(key, str) and key.startswith('@'):
                    continue
                inside = in_links or key == 'Links'
                uri = _link(item)
                if uri is not None:
                    if self.mode == '*' or (self.mode == '~') == inside:
                        found.append((value, key, uri))
                elif isinstance(item, (dict, list)):
                    walk(item, inside)
        walk(body, False)
        return found

    def _sample(self, uri):
        if uri not in self.samples:
            body, tag = _fetched(self.app, uri)
            self.samples[uri] = body
            systems = base.systems_driver(self.app, 'count_systems')
            if tag and systems is not None and body.get('@odata.id') == \
                    uri and _rule(self.app.url_map, uri) == SYSTEM_RULE:
                SAMPLED.setdefault(systems, {})[self.mode] = (
                    uri.rpartition('/')[2], tag, len(self.links(body)))
        return self.samples[uri]

    def estimate(self, links, levels):
        """Resources the expansion fetches, estimated; past the cap a 400.

        Refuses as soon as the estimate passes :data:`MAX_EXPANDED`,
        before fetching more samples.
        """
        url_map = self.app.url_map
        level, total, fanout = {}, len(links), {}
        for _, _, uri in links:
            rule = _rule(url_map, uri)
            count, example = level.get(rule, (0, uri))
            level[rule] = (count + 1, example)
        for _ in range(levels - 1):
            if total > MAX_EXPANDED:
                break
            below = {}
            for rule, (count, example) in level.items():
                if rule not in fanout:
                    body = self._sample(example)
                    fanout[rule] = [] if body is None else [
                        (_rule(url_map, uri), uri)
                        for _, _, uri in self.links(body)]
                for child, uri in fanout[rule]:
                    total += count
                    found = below.get(child, (0, uri))
                    below[child] = (found[0] + count, found[1])
                if total > MAX_EXPANDED:
                    break
            level = below
        if total > MAX_EXPANDED:
            raise self._refuse()
        return total

    def _resource(self, uri):
        self.fetched += 1
        if self.fetched > MAX_EXPANDED:
            raise self._refuse()
        if uri in self.samples:
            return self.samples.pop(uri)
        return _fetch(self.app, uri)

    def expand(self, body, levels):
        links = self.links(body)
        self.estimate(links, levels)
        for depth in range(levels):
            below = []
            for holder, key, uri in links:
                resource = self._resource(uri)
                if resource is not None:
                    holder[key] = resource
                    if depth + 1 < levels:
                        below += self.links(resource)
            links = below


def _select(body, paths):
    kept = {name: value for name, value in body.items()
            if name.startswith('@odata.')}
    for path in paths:
        source, target = body, kept
        parts = path.split('/')
        for part in parts[:-1]:
            if not isinstance(source.get(part), dict):
                break
            source, target = source[part], target.setdefault(part, {})
        else:
            if isinstance(source, dict) and parts[-1] in source:
                target[parts[-1]] = source[parts[-1]]
    return kept


def _page(body, query):
    members = body['Members']
    skip, top = query.get('$skip') or 0, query.get('$top')
    end = len(members) if top is None else skip + top
    body['Members'] = members[skip:end]
    body.setdefault('Members@odata.count', len(members))
    if top is not None and end < len(members):
        args = flask.request.args.to_dict()
        args['$skip'] = str(end)
        body['Members@odata.nextLink'] = '%s?%s' % (
            flask.request.path, urllib.parse.urlencode(args, safe='$'))


def _apply(app, body, query):
    collection = isinstance(body.get('Members'), list)
    if query.get('only') and collection and len(body['Members']) == 1:
        uri = _link(body['Members'][0])
        member = _fetch(app, uri) if uri else None
        if member is not None:
            body, collection = member, False
    if '$skip' in query or '$top' in query:
        if not collection:
            raise messages.RedfishError(
                'QueryNotSupportedOnResource', detail='$skip and $top apply '
                'to collections only')
        _page(body, query)
    if '$expand' in query:
        mode, levels = query['$expand']
        _Expander(app, mode).expand(body, levels)
    if '$select' in query:
        body = _select(body, query['$select'])
    return body


def after(app, response):
    """An ``after`` handler: apply this request's query to its answer."""
    query = _current()
    if not query or response.status_code != 200 or \
            response.mimetype != 'application/json':
        return
    try:
        body = json.loads(response.get_data())
    except ValueError:
        return
    if not isinstance(body, dict):
        return
    try:
        body = _apply(app, body, query)
    except messages.RedfishError as exc:
        response.status_code = exc.code
        body = messages.body(exc, exc.code, flask.request.path)
        response.headers.pop('ETag', None)
    response.set_data(json.dumps(body))
