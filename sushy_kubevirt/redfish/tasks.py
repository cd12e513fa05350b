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
"""The TaskService, its Tasks and their monitors.

A Task is a firmware update (:mod:`.updateservice`), kept on its VM
(:mod:`sushy_kubevirt.kubevirt.firmwareupdate`); its id is
``<System id>.<n>``. While the task is New or Running, its monitor
(``TaskMonitors/{id}``, the ``Location`` of the SimpleUpdate's 202) and
the Task itself answer 202 with the Task and ``Retry-After`` (an
HTTP-date, a second on): sushy (and so Ironic) polls the ``@odata.id``
of the 202's body until it is no longer 202. Once Completed or Exception
both answer 200 with the Task. Offered in the full feature set only (404
otherwise), as the UpdateService. The collection lists the latest task
of each System the account reaches, a finished one for
``drivers.firmwareupdates.LISTED_FOR`` seconds after its end; the Task
itself stays readable until the System's next update replaces it.
"""

import datetime
import email.utils
import time

import flask
from sushy_tools import error

from sushy_kubevirt.accounts import privileges
from sushy_kubevirt.drivers import firmwareupdates
from sushy_kubevirt.kubevirt import firmwareupdate
from sushy_kubevirt.kubevirt import identity
from sushy_kubevirt import messages
from sushy_kubevirt.redfish import base

SERVICE = '/redfish/v1/TaskService'
TASKS = SERVICE + '/Tasks'
MONITORS = SERVICE + '/TaskMonitors'
#: Seconds a client is asked to wait between two polls.
RETRY_AFTER = 1
_METHOD = 'firmware_updates'
_UPDATE = 'Update.1.0'
#: Update registry messages: (severity, text, resolution).
_UPDATE_MESSAGES = {
    'UpdateSuccessful': ('OK', "Device '%1' successfully updated with "
                         "image '%2'.", 'None.'),
    'AwaitToActivate': ('OK', "Awaiting for an action to proceed with "
                        "activating image '%1' on '%2'.", 'Perform the '
                        'requested action to advance the update '
                        'operation.'),
    'TransferFailed': ('Critical', "Transfer of image '%1' to '%2' "
                       "failed.", 'None.'),
}
_PERCENT = {firmwareupdate.NEW: 0, firmwareupdate.RUNNING: 50,
            firmwareupdate.COMPLETED: 100, firmwareupdate.EXCEPTION: 100}


def _iso(epoch):
    return datetime.datetime.fromtimestamp(
        epoch, datetime.timezone.utc).isoformat(timespec='seconds')


def _update_message(message_id, *args):
    severity, text, resolution = _UPDATE_MESSAGES[message_id]
    for index, arg in enumerate(args, 1):
        text = text.replace('%%%d' % index, arg)
    return {'MessageId': '%s.%s' % (_UPDATE, message_id), 'Message': text,
            'MessageArgs': list(args), 'MessageSeverity': severity,
            'Resolution': resolution}


def _messages(record, device):
    state, image = record['state'], record['image']
    if state == firmwareupdate.COMPLETED:
        found = [_update_message('UpdateSuccessful', device, image)]
        if record['component'] == firmwareupdate.BIOS:
            found.append(_update_message('AwaitToActivate', image, device))
        return found
    if state == firmwareupdate.EXCEPTION:
        failed = messages.message('GeneralError')
        failed['Resolution'] = record.get('reason') or 'None.'
        return [_update_message('TransferFailed', image, device), failed]
    return []


def task_body(vm, record):
    """The Task of ``record``, the latest update of ``vm``."""
    tid = firmwareupdates.task_id(vm, record['n'])
    system = identity.system_id(vm)
    device = ('/redfish/v1/Systems/%s/Bios' if record['component'] ==
              firmwareupdate.BIOS else '/redfish/v1/Managers/%s') % system
    state = record['state']
    body = {
        '@odata.type': '#Task.v1_4_3.Task',
        '@odata.id': '%s/%s' % (TASKS, tid),
        'Id': tid,
        'Name': 'Update of the %s of %s to %s' % (
            record['component'], identity.key(vm)[1], record['version']),
        'TaskState': state,
        'TaskStatus': 'Critical' if state == firmwareupdate.EXCEPTION
        else 'OK',
        'StartTime': _iso(record['start']),
        'PercentComplete': _PERCENT[state],
        'TaskMonitor': '%s/%s' % (MONITORS, tid),
        'HidePayload': True,
        'Messages': _messages(record, device),
    }
    if state in firmwareupdate.FINISHED:
        body['EndTime'] = _iso(record['end'])
    return body


def _answer(vm, record):
    """200 with a finished task; 202, Location and Retry-After else."""
    body = task_body(vm, record)
    if record['state'] in firmwareupdate.FINISHED:
        return base.json_response(body)
    # An HTTP-date: sushy's TaskMonitor.wait sleeps for a number of
    # seconds given as a string and fails.
    return base.json_response(body, 202, {
        'Location': body['TaskMonitor'],
        'Retry-After': email.utils.formatdate(time.time() + RETRY_AFTER,
                                              usegmt=True)})


def accepted(vm, record):
    """The 202 of a SimpleUpdate that started task ``record``."""
    return _answer(vm, record)


def _updates():
    systems = base.systems_driver(flask.current_app, _METHOD)
    if systems is None:
        raise error.NotFound()
    if flask.current_app.feature_set != 'full':
        raise error.FeatureNotAvailable('TaskService')
    return systems.firmware_updates()


def service_body():
    return {
        '@odata.type': '#TaskService.v1_2_0.TaskService',
        '@odata.id': SERVICE,
        'Id': 'TaskService',
        'Name': 'Task Service',
        'Description': 'The firmware updates of the Systems and Managers',
        'ServiceEnabled': True,
        'DateTime': _iso(time.time()),
        'CompletedTaskOverWritePolicy': 'Oldest',
        'LifeCycleEventOnTaskStateChange': False,
        'Status': {'State': 'Enabled', 'Health': 'OK'},
        'Tasks': {'@odata.id': TASKS},
    }


# extension-point handlers (sushy-tools' stock endpoints)

def serve_service(app):
    """Our TaskService instead of sushy-tools' canned one."""
    if base.systems_driver(app, _METHOD) is None:
        return None
    _updates()
    return base.json_response(service_body())


def serve_canned_task(app):
    """sushy-tools' ``Tasks/42``: one of ours, if it existed."""
    if base.systems_driver(app, _METHOD) is None:
        return None
    return task('42')


# routes of our blueprint

@base.route(TASKS, GET=privileges.LOGIN)
def collection():
    members = [{'@odata.id': '%s/%s' % (TASKS, firmwareupdates.task_id(
        vm, record['n']))} for vm, record in _updates().listed()]
    return base.json_response({
        '@odata.type': '#TaskCollection.TaskCollection',
        '@odata.id': TASKS,
        'Name': 'Task Collection',
        'Members@odata.count': len(members),
        'Members': members,
    })


@base.route(TASKS + '/<task_id>', GET=privileges.LOGIN)
def task(task_id):
    return _answer(*_updates().find(task_id))


@base.route(MONITORS + '/<task_id>', GET=privileges.LOGIN)
def monitor(task_id):
    return _answer(*_updates().find(task_id))
