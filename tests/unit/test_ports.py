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

"""Ports for servers that restart below the ephemeral range."""

import socket

import pytest

from sushy_kubevirt import ports


def test_a_free_port_below_the_ephemeral_range(monkeypatch, tmp_path):
    setting = tmp_path / 'ip_local_port_range'
    setting.write_text('40000\t60999\n')
    monkeypatch.setattr(ports, '_RANGE', str(setting))
    for _ in range(20):
        port = ports.restartable('127.0.0.1')
        assert 20000 <= port < 40000
        with socket.socket() as sock:
            sock.bind(('127.0.0.1', port))


def test_without_the_setting_the_usual_range_is_assumed(monkeypatch):
    monkeypatch.setattr(ports, '_RANGE', '/nonexistent')
    assert 16384 <= ports.restartable('127.0.0.1') < 32768


def test_no_free_port_is_an_error_naming_the_range(monkeypatch):
    def taken(self, address):
        raise OSError(98, 'Address already in use')
    monkeypatch.setattr(socket.socket, 'bind', taken)
    with pytest.raises(OSError, match='between 16384 and 32767 after 100'):
        ports.restartable('127.0.0.1')


def test_a_reserved_port_cannot_be_taken_until_released():
    with ports.reserved('127.0.0.1') as held:
        port = held.getsockname()[1]
        with socket.socket() as other, pytest.raises(OSError):
            other.bind(('127.0.0.1', port))
        held.listen()
        with socket.create_connection(('127.0.0.1', port), timeout=5):
            pass


def test_a_port_is_handed_out_once(monkeypatch):
    # Two servers named before either listens: the second draw of the
    # same port is skipped, though nothing holds it any more.
    free = []
    for _ in range(2):
        with socket.socket() as sock:
            sock.bind(('127.0.0.1', 0))
            free.append(sock.getsockname()[1])
    draws = iter([free[0], free[0], free[1]])
    monkeypatch.setattr(ports.random, 'randrange', lambda low, high: next(
        draws))
    monkeypatch.setattr(ports, '_GIVEN', ports.collections.deque(maxlen=8))
    assert ports.restartable('127.0.0.1') == free[0]
    assert ports.restartable('127.0.0.1') == free[1]
