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

"""Counters of cache reads and live API calls, per verb and resource."""

import collections
import logging
import threading

LOG = logging.getLogger(__name__)

CACHE_READS = 'sushy_kubevirt_cache_reads_total'
API_CALLS = 'sushy_kubevirt_api_calls_total'
THROTTLE = 'sushy_kubevirt_api_throttle_seconds_total'

SYNCED = 'sushy_kubevirt_informer_synced'
RELISTS = 'sushy_kubevirt_informer_relists_total'
WATCH_RESTARTS = 'sushy_kubevirt_informer_watch_restarts_total'
RV_AGE = 'sushy_kubevirt_informer_resource_version_age_seconds'
FORBIDDEN = 'sushy_kubevirt_informer_forbidden'
UNREADABLE = 'sushy_kubevirt_namespace_unreadable'

_HELP = {
    CACHE_READS: 'Reads answered from the watch cache.',
    API_CALLS: 'Live calls made to the Kubernetes API server.',
    THROTTLE: 'Seconds live calls waited for the client rate limiter.',
    SYNCED: '1 while reads are answered from the cache: listed, and the '
            'API server has not refused it (403) since.',
    RELISTS: 'Lists the informer made after its first one.',
    WATCH_RESTARTS: 'Watches the informer opened after its first one.',
    RV_AGE: 'Seconds since the informer last advanced its '
            'resourceVersion (list, event or bookmark).',
    FORBIDDEN: '1 while the API server answers the informer 403 (its '
               'reads answer Redfish 503).',
    UNREADABLE: '1 while a served namespace cannot be read (reason '
                'forbidden or missing): its systems are left out of the '
                'Systems collection and answer Redfish 503.',
}

#: The health of one informer, as :meth:`Accounting.render` shows it.
Health = collections.namedtuple(
    'Health', 'resource namespace synced relists watch_restarts rv_age '
    'forbidden')


def _escape(value):
    return (value.replace('\\', '\\\\').replace('"', '\\"')
            .replace('\n', '\\n'))


class Accounting:
    """Thread-safe counters, as kubevirt-redfish's GetVM.cache / .direct."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts = collections.Counter()
        self._throttled = 0.0
        self._health = None
        self._namespaces = None

    def report_health(self, source, namespaces=None):
        """Render ``source()``, an iterable of :class:`Health`, too.

        ``namespaces()`` gives ``[(namespace, reason)]``, reason '' for a
        readable one. None stops it (the informers are gone).
        """
        self._health = source
        self._namespaces = namespaces

    def cache(self, verb, resource):
        """Count a read answered by the cache."""
        self._add(CACHE_READS, verb, resource)

    def live(self, verb, resource):
        """Count a call sent to the API server."""
        self._add(API_CALLS, verb, resource)

    def throttled(self, seconds):
        with self._lock:
            self._throttled += seconds

    def _add(self, metric, verb, resource):
        with self._lock:
            self._counts[metric, verb, resource] += 1
        LOG.debug('%s %s %s', 'cache' if metric == CACHE_READS else 'live',
                  verb, resource)

    def cache_reads(self, verb=None, resource=None):
        return self._sum(CACHE_READS, verb, resource)

    def live_calls(self, verb=None, resource=None):
        return self._sum(API_CALLS, verb, resource)

    def _sum(self, metric, verb, resource):
        with self._lock:
            return sum(n for (m, v, r), n in self._counts.items()
                       if m == metric and verb in (None, v)
                       and resource in (None, r))

    def snapshot(self):
        """``{(metric, verb, resource): count}``, a copy."""
        with self._lock:
            return dict(self._counts)

    def render(self):
        """Prometheus text exposition format (version 0.0.4)."""
        with self._lock:
            counts = sorted(self._counts.items())
            throttled = self._throttled
        lines = []
        for metric in (CACHE_READS, API_CALLS):
            lines += ['# HELP %s %s' % (metric, _HELP[metric]),
                      '# TYPE %s counter' % metric]
            lines += ['%s{verb="%s",resource="%s"} %d'
                      % (metric, _escape(v), _escape(r), n)
                      for (m, v, r), n in counts if m == metric]
        lines += ['# HELP %s %s' % (THROTTLE, _HELP[THROTTLE]),
                  '# TYPE %s counter' % THROTTLE,
                  '%s %s' % (THROTTLE, repr(float(throttled)))]
        source, namespaces = self._health, self._namespaces
        if source is not None:
            lines += _render_health(sorted(
                source(), key=lambda h: (h.resource, h.namespace)))
        if namespaces is not None:
            lines += ['# HELP %s %s' % (UNREADABLE, _HELP[UNREADABLE]),
                      '# TYPE %s gauge' % UNREADABLE]
            lines += ['%s{namespace="%s",reason="%s"} %d'
                      % (UNREADABLE, _escape(ns), _escape(reason),
                         int(bool(reason)))
                      for ns, reason in sorted(namespaces())]
        return '\n'.join(lines) + '\n'


def _render_health(records):
    lines = []
    for metric, kind, value in (
            (SYNCED, 'gauge', lambda h: int(h.synced)),
            (RELISTS, 'counter', lambda h: h.relists),
            (WATCH_RESTARTS, 'counter', lambda h: h.watch_restarts),
            (RV_AGE, 'gauge', lambda h: h.rv_age),
            (FORBIDDEN, 'gauge', lambda h: int(h.forbidden))):
        lines += ['# HELP %s %s' % (metric, _HELP[metric]),
                  '# TYPE %s %s' % (metric, kind)]
        lines += ['%s{resource="%s",namespace="%s"} %s'
                  % (metric, _escape(h.resource), _escape(h.namespace),
                     _number(value(h)))
                  for h in records if value(h) is not None]
    return lines


def _number(value):
    return repr(round(value, 3)) if isinstance(value, float) else str(value)
