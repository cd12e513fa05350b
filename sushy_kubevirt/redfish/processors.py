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

"""Processors: integers where sushy-tools renders strings.

sushy-tools renders ``TotalCores`` and ``TotalThreads`` of a Processor as
strings and the collection's ``@odata.id`` with a trailing ``/``.
"""

import flask

from sushy_kubevirt.redfish import base
from sushy_kubevirt.redfish import jsonbody


def processor_body(app, response):
    """``TotalCores`` and ``TotalThreads`` as integers."""
    if not base.plugin_driver(app):
        return

    def edit(body):
        changed = False
        for name in ('TotalCores', 'TotalThreads'):
            value = body.get(name)
            if isinstance(value, str) and value.isdigit():
                body[name] = int(value)
                changed = True
        return changed

    jsonbody.rewrite(response, edit)


def collection_body(app, response):
    """The collection's own URI, without sushy-tools' trailing ``/``."""
    def edit(body):
        body['@odata.id'] = flask.request.path.rstrip('/')
        return True
    base.editor(edit)(app, response)
