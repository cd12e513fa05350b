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

"""``/metrics``: the systems driver's Prometheus text.

Not a Redfish resource: the watch cache's and the API calls' counters,
and what became of the security log's records, for a Prometheus
scraper. 404 for drivers that export none. They count every namespace
served, so reading them needs ConfigureManager, as the Manager's own
settings do.
"""

import flask
from sushy_tools import error

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.accounts import recorder
from sushy_kubevirt.redfish import base

CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'


@base.route('/metrics', GET=privileges.CONFIGURE_MANAGER)
def metrics():
    """The systems driver's ``metrics_text()`` and the security log's.

    404 for other drivers.
    """
    systems = base.systems_driver(flask.current_app, 'metrics_text')
    if systems is None:
        raise error.NotFound(
            'No metrics: the configured systems driver exports none')
    return flask.Response(systems.metrics_text() + recorder.metrics_text(),
                          content_type=CONTENT_TYPE)
