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

"""Pure summaries of latency samples."""

import math


def percentile(sorted_values, fraction):
    """Nearest-rank percentile of an already sorted list (None if empty)."""
    if not sorted_values:
        return None
    rank = max(1, math.ceil(fraction * len(sorted_values)))
    return sorted_values[rank - 1]


def summarize(latencies, wall_s, errors=0):
    """Count, throughput and p50/p95/p99 (milliseconds) of one sample set."""
    values = sorted(latencies)
    ms = (lambda v: None if v is None else round(v * 1000.0, 2))
    return {
        'requests': len(values),
        'errors': errors,
        'wall_s': round(wall_s, 3),
        'rps': round(len(values) / wall_s, 1) if wall_s > 0 else None,
        'mean_ms': ms(sum(values) / len(values)) if values else None,
        'p50_ms': ms(percentile(values, 0.50)),
        'p95_ms': ms(percentile(values, 0.95)),
        'p99_ms': ms(percentile(values, 0.99)),
    }


def ratio(numerator, denominator):
    """``numerator / denominator`` rounded, or None when undefined."""
    if not numerator or not denominator:
        return None
    return round(numerator / denominator, 2)


def per_request(counts, requests):
    """Divide API-call counts ``{kind: n}`` by the number of requests."""
    if not requests:
        return {}
    return {kind: round(n / requests, 3) for kind, n in sorted(counts.items())
            if n}
