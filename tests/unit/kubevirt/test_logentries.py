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

import datetime

from sushy_kubevirt.kubevirt import logentries

UTC = datetime.timezone.utc


def event(uid, reason='Started', kind='VirtualMachine', name='vm1',
          type_='Normal', last='2026-01-02T03:04:05Z', **extra):
    body = {'metadata': {'uid': uid, 'name': 'ev-' + uid,
                         'namespace': 'ns', 'managedFields': [{}],
                         'creationTimestamp': '2026-01-01T00:00:00Z'},
            'involvedObject': {'kind': kind, 'name': name,
                               'namespace': 'ns', 'uid': 'x'},
            'reason': reason, 'message': 'msg ' + uid, 'type': type_,
            'source': {'component': 'virt-controller', 'host': 'h'}}
    if last:
        body['lastTimestamp'] = last
    body.update(extra)
    return body


def test_slim_keeps_what_an_entry_needs():
    slim = logentries.slim(event('u1', series={'lastObservedTime': 'T',
                                               'count': 3}))
    assert 'managedFields' not in slim['metadata']
    assert slim['involvedObject'] == {'kind': 'VirtualMachine',
                                      'name': 'vm1', 'namespace': 'ns'}
    assert slim['source'] == {'component': 'virt-controller'}
    assert slim['series'] == {'lastObservedTime': 'T', 'count': 3}
    assert logentries.entry(slim, '/c') == logentries.entry(
        event('u1', series={'lastObservedTime': 'T', 'count': 3}), '/c')
    kept = logentries.slim(event('u2', metadata={'uid': 'u2', 'annotations': {
        logentries.CLIENTS: '4', 'other': 'x' * 1000}}))
    assert kept['metadata']['annotations'] == {logentries.CLIENTS: '4'}


def test_index_key():
    assert logentries.involved_key(event('u1')) == ['ns/vm1']


def test_system_objects_vm_vmi_and_datavolumes():
    vm = {'metadata': {'name': 'vm1', 'namespace': 'ns'}, 'spec': {
        'dataVolumeTemplates': [{'metadata': {'name': 'vm1-root'}}],
        'template': {'spec': {'volumes': [
            {'name': 'cd', 'dataVolume': {'name': 'vm1-vmedia-cd'}},
            {'name': 'ci', 'cloudInitNoCloud': {}}]}}}}
    assert logentries.system_objects(vm) == {
        ('VirtualMachine', 'vm1'), ('VirtualMachineInstance', 'vm1'),
        ('DataVolume', 'vm1-root'), ('DataVolume', 'vm1-vmedia-cd')}
    events = [event('a'), event('b', kind='DataVolume', name='vm1-root'),
              event('c', kind='Pod', name='vm1'), event('d', name='vm2')]
    assert [e['metadata']['uid'] for e in logentries.of_system(
        events, logentries.system_objects(vm))] == ['a', 'b']


def test_when_prefers_series_then_last_then_event_time_then_creation():
    assert logentries.when(event('a', series={
        'lastObservedTime': '2026-05-01T00:00:00.5Z'})) == datetime.datetime(
        2026, 5, 1, 0, 0, 0, 500000, tzinfo=UTC)
    assert logentries.iso(logentries.when(event('a'))) == \
        '2026-01-02T03:04:05+00:00'
    assert logentries.iso(logentries.when(event(
        'a', last=None, eventTime='2026-02-02T00:00:00.123456Z'))) == \
        '2026-02-02T00:00:00+00:00'
    assert logentries.iso(logentries.when(event('a', last=None))) == \
        '2026-01-01T00:00:00+00:00'
    assert logentries.iso(logentries.when(event(
        'a', last=None, firstTimestamp='2026-03-03T00:00:00Z'))) == \
        '2026-03-03T00:00:00+00:00'
    assert logentries.when({'lastTimestamp': 'garbage'}).year == 1970


def written(uid, version, **extra):
    body = event(uid, **extra)
    body['metadata']['resourceVersion'] = version
    return body


def test_events_of_one_second_keep_the_order_they_were_written():
    # CDI's import Events, one second apart at most: their uids are
    # random, their resourceVersions the order the API server took them.
    second = '2026-01-01T00:00:05Z'
    events = [
        written('a', '1007', reason='ImportSucceeded', last=second),
        written('b', '1003', reason='ImportScheduled', last=second),
        written('c', '1005', reason='ImportInProgress', last=None,
                eventTime='2026-01-01T00:00:05.000001Z'),
        written('d', '1009', reason='Started', last=None,
                series={'lastObservedTime': '2026-01-01T00:00:05.9Z'}),
        written('e', '1001', reason='Later', last='2026-01-01T00:00:06Z'),
        written('f', '1000', reason='Earlier', last=None,
                firstTimestamp='2026-01-01T00:00:04Z'),
    ]
    ordered = [e['reason'] for e in logentries.visible(events)]
    assert ordered == ['Earlier', 'ImportScheduled', 'ImportInProgress',
                       'ImportSucceeded', 'Started', 'Later']
    assert [e['reason'] for e in logentries.visible(
        list(reversed(events)))] == ordered
    # no (numeric) resourceVersion: the uid decides, stably
    assert [e['metadata']['uid'] for e in logentries.visible(
        [written('y', 'x'), written('x', '')])] == ['x', 'y']


def test_entry_fields():
    body = logentries.entry(
        event('u1', reason='FailedScheduling', type_='Warning'),
        '/redfish/v1/Systems/S/LogServices/Log/Entries',
        '/redfish/v1/Systems/S')
    assert body == {
        '@odata.type': '#LogEntry.v1_4_0.LogEntry',
        '@odata.id': '/redfish/v1/Systems/S/LogServices/Log/Entries/u1',
        'Id': 'u1', 'Name': 'Log Entry u1', 'EntryType': 'Event',
        'Severity': 'Warning', 'Created': '2026-01-02T03:04:05+00:00',
        'Message': 'FailedScheduling: msg u1',
        'MessageId': 'KubernetesEvent.1.0.FailedScheduling',
        'Links': {'OriginOfCondition': {
            '@odata.id': '/redfish/v1/Systems/S'}}}
    assert logentries.entry(event('u2'), '/c')['Severity'] == 'OK'
    assert 'Links' not in logentries.entry(event('u2'), '/c')
    assert logentries.message({'message': 'only'}) == 'only'
    assert logentries.message_id({'reason': 'a-b c'}) == \
        'KubernetesEvent.1.0.abc'
    assert logentries.message_id({}) == 'KubernetesEvent.1.0.Unknown'


def test_visible_oldest_first_bounded_and_cleared():
    events = [event('c', last='2026-01-01T00:00:03Z'),
              event('a', last='2026-01-01T00:00:01Z'),
              event('b', last='2026-01-01T00:00:02Z')]
    ids = [e['metadata']['uid'] for e in logentries.visible(events)]
    assert ids == ['a', 'b', 'c']
    assert [e['metadata']['uid'] for e in
            logentries.visible(events, limit=2)] == ['b', 'c']
    assert logentries.visible(events, limit=0) == []
    marker = logentries.record(
        'ns', {'kind': 'VirtualMachine', 'name': 'vm1', 'namespace': 'ns'},
        logentries.CLEARED, 'cleared by admin',
        datetime.datetime(2026, 1, 1, 0, 0, 2, tzinfo=UTC))
    marker['metadata']['uid'] = 'm'
    shown = logentries.visible(events + [marker])
    assert [e['metadata']['uid'] for e in shown] == ['m', 'c']
    # a foreign Event of that reason is no marker
    foreign = dict(marker, reportingComponent='other', source={})
    assert not logentries.is_marker(foreign)


def test_record_body():
    now = datetime.datetime(2026, 3, 4, 5, 6, 7, 890, tzinfo=UTC)
    body = logentries.record(
        'sessions', {'kind': 'Secret', 'name': 'sushy', 'namespace':
                     'sessions'}, 'LoginFailed', 'x' * 2000, now,
        instance='host/1', labels={logentries.LABEL: 'true'})
    assert body['metadata'] == {
        'generateName': 'sushy.20260304050607000890.',
        'namespace': 'sessions', 'labels': {logentries.LABEL: 'true'}}
    assert body['type'] == 'Warning'
    assert body['lastTimestamp'] == '2026-03-04T05:06:07Z'
    assert len(body['message']) == 1024
    assert body['reportingComponent'] == logentries.COMPONENT
    assert logentries.entry(dict(body, metadata={'uid': 'u'}), '/c')[
        'Created'] == '2026-03-04T05:06:07+00:00'


def test_an_event_of_several_occurrences_says_how_many():
    assert logentries.message(event('a', count=1)) == 'Started: msg a'
    assert logentries.message(event(
        'a', count=3, firstTimestamp='2026-01-02T03:00:00Z')) == \
        'Started: msg a (3 times since 2026-01-02T03:00:00+00:00)'
    assert logentries.message(event(
        'a', count=1, series={'count': 5, 'lastObservedTime': 'T'})) == \
        'Started: msg a (5 times)'
    counted = event('a', count=1000, metadata={
        'uid': 'a', 'annotations': {logentries.CLIENTS: '49'}})
    assert logentries.message(counted) == \
        'Started: msg a (1000 times from 49 clients)'
    for odd in (True, -2, '7', None):
        assert logentries.message(event('a', count=odd)) == 'Started: msg a'


def test_counted_records_are_named_by_reason_account_and_window():
    window = datetime.datetime(2026, 3, 4, 5, 0, tzinfo=UTC)
    name = logentries.aggregate_name('log', 'LoginFailed', 'admin', window)
    assert name.startswith('log.202603040500.') and len(name) == 33
    assert name == logentries.aggregate_name(
        'log', 'LoginFailed', 'admin', window.astimezone(
            datetime.timezone(datetime.timedelta(hours=2))))
    assert len({name, logentries.aggregate_name(
        'log', 'LoginFailed', 'other', window), logentries.aggregate_name(
        'log', 'SessionCreated', 'admin', window), logentries.aggregate_name(
        'log', 'LoginFailed', 'admin', window + datetime.timedelta(
            minutes=10))}) == 4
    first = datetime.datetime(2026, 3, 4, 5, 1, 2, tzinfo=UTC)
    body = logentries.counted(logentries.record(
        'ns', {'kind': 'Secret', 'name': 'log', 'namespace': 'ns'},
        'LoginFailed', 'refused', first + datetime.timedelta(seconds=9)),
        name, first, 7, 3)
    assert body['metadata'] == {'name': name, 'namespace': 'ns',
                                'annotations': {logentries.CLIENTS: '3'}}
    assert (body['count'], body['firstTimestamp'], body['lastTimestamp']) \
        == (7, '2026-03-04T05:01:02Z', '2026-03-04T05:01:11Z')


def test_recount_adds_to_what_was_read_and_tests_its_version():
    read = {'metadata': {'resourceVersion': '41', 'annotations': {
        logentries.CLIENTS: '3'}}, 'count': 7,
        'lastTimestamp': '2026-03-04T05:01:11Z'}
    later = datetime.datetime(2026, 3, 4, 5, 2, tzinfo=UTC)
    assert logentries.recount(read, 5, 2, later) == [
        {'op': 'test', 'path': '/metadata/resourceVersion', 'value': '41'},
        {'op': 'add', 'path': '/count', 'value': 12},
        {'op': 'add', 'path': '/lastTimestamp',
         'value': '2026-03-04T05:02:00Z'},
        {'op': 'add', 'path': '/metadata/annotations/sushy-kubevirt.io~1'
         'clients', 'value': '5'}]
    # an earlier occurrence keeps the later time; no annotations yet
    del read['metadata']['annotations']
    ops = logentries.recount(read, 1, 0, later.replace(minute=0))
    assert ops[2]['value'] == '2026-03-04T05:01:11Z'
    assert ops[3] == {'op': 'add', 'path': '/metadata/annotations',
                      'value': {logentries.CLIENTS: '0'}}
