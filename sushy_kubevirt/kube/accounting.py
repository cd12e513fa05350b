"""Counters of cache reads and live API calls, per verb and resource."""

import collections
import logging
import threading

LOG = logging.getLogger(__name__)

CACHE_READS = 'sushy_kubevirt_cache_reads_total'
API_CALLS = 'sushy_kubevirt_api_calls_total'
THROTTLE = 'sushy_kubevirt_api_throttle_seconds_total'

_HELP = {
    CACHE_READS: 'Reads answered from the watch cache.',
    API_CALLS: 'Live calls made to the Kubernetes API server.',
    THROTTLE: 'Seconds live calls waited for the client rate limiter.',
}


def _escape(value):
    return (value.replace('\\', '\\\\').replace('"', '\\"')
            .replace('\n', '\\n'))


class Accounting:
    """Thread-safe counters, as kubevirt-redfish's GetVM.cache / .direct."""

    def __init__(self):
        self._lock = threading.Lock()
        self._counts = collections.Counter()
        self._throttled = 0.0

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
        return '\n'.join(lines) + '\n'
