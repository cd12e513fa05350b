#!/bin/bash
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

# A stand-in devstack for the plugin's functional test:
#   stackenv.sh stack|unstack|clean
# runs the phases of that mode as stack.sh/unstack.sh/clean.sh do, each
# first for a stand-in of Ironic's plugin (its Redfish emulator part), then
# for devstack/plugin.sh, sourced in one shell. devstack's helpers are
# stubbed below; "systemd" units are background processes (pid files in
# $STACK_ROOT/run), so services really run, on 127.0.0.1 only.
#
# Input (environment): STACK_ROOT (a scratch directory), PLUGIN_REPO,
# STACK_VENV (the Python environment with sushy-tools), HOST_IP,
# IRONIC_REDFISH_EMULATOR_PORT and the local.conf variables under test.

set -o errexit

MODE=$1

# --- stubbed devstack helpers ---------------------------------------------
CALLS=$STACK_ROOT/calls.log
RUN=$STACK_ROOT/run
SYSTEMD_DIR=$STACK_ROOT/systemd
mkdir -p $RUN $SYSTEMD_DIR
SYSTEMCTL=stub_systemctl
ENABLED_SERVICES=${ENABLED_SERVICES:-ir-api,ir-cond}

function _call { echo "$*" >> $CALLS; }
function stub_systemctl { _call "systemctl $*"; }
function echo_summary { echo "summary: $*"; }
function warn { echo "WARNING: ${*:2}" >&2; }
function die { echo "ERROR: ${*:2}" >&2; exit 1; }
function sudo { "$@"; }
function trueorfalse {
    local default=$1 value=${!2:-$1}
    case ${value,,} in
        1|yes|true|on) echo True ;;
        0|no|false|off) echo False ;;
        *) echo $default ;;
    esac
}
function is_service_enabled {
    local name
    for name in "$@"; do
        [[ ,$ENABLED_SERVICES, == *,$name,* ]] && return 0
    done
    return 1
}
function enable_service {
    _call "enable_service $*"
    is_service_enabled $1 || ENABLED_SERVICES+=,$1
}
function disable_service {
    _call "disable_service $*"
    ENABLED_SERVICES=$(echo ",$ENABLED_SERVICES," | sed "s/,$1,/,/;s/^,//;s/,$//")
}
function setup_develop { _call "setup_develop $* VIRTUAL_ENV=${VIRTUAL_ENV:-}"; }
function pip_install { _call "pip_install $*"; }
function write_user_unit_file {
    _call "write_user_unit_file $1"
    echo "$2" > $SYSTEMD_DIR/$1
}
function start_service {
    _call "start_service $1"
    local log=$STACK_ROOT/$1.log
    # Each service is a session leader, so stop_service ends its children.
    TMPDIR=$STACK_ROOT/tmp setsid bash -c "exec $(cat $SYSTEMD_DIR/$1)" \
        >>$log 2>&1 < /dev/null &
    echo $! > $RUN/$1.pid
}
function stop_service {
    _call "stop_service $1"
    local pid_file=$RUN/$1.pid i
    [[ -f $pid_file ]] || return 0
    local pid=$(cat $pid_file)
    kill -TERM -- -$pid 2>/dev/null || true
    for i in $(seq 100); do
        kill -0 $pid 2>/dev/null || break
        sleep 0.1
    done
    kill -KILL -- -$pid 2>/dev/null || true
    rm -f $pid_file
}
function restart_service { stop_service $1; start_service $1; }
function wait_for_service {
    _call "wait_for_service $*"
    timeout $1 bash -c "until curl -s -o /dev/null -f $2; do sleep 0.2; done"
}

# --- devstack's globals ----------------------------------------------------
DEST=$STACK_ROOT/opt
DATA_DIR=$STACK_ROOT/data
STACK_USER=$(whoami)
mkdir -p $DEST $DATA_DIR $STACK_ROOT/tmp
ln -sfn $PLUGIN_REPO $DEST/sushy-kubevirt
DEVSTACK_VENV=$STACK_VENV

# --- a stand-in for Ironic's plugin (the Redfish emulator part) -----------
IRONIC_CONF_DIR=$STACK_ROOT/etc/ironic
IRONIC_DATA_DIR=$DATA_DIR/ironic
IRONIC_DEPLOY_DRIVER=${IRONIC_DEPLOY_DRIVER:-redfish}
IRONIC_IS_HARDWARE=${IRONIC_IS_HARDWARE:-False}
IRONIC_BAREMETAL_BASIC_OPS=${IRONIC_BAREMETAL_BASIC_OPS:-False}
IRONIC_VM_MACS_CSV_FILE=$IRONIC_DATA_DIR/ironic_macs.csv
IRONIC_REDFISH_EMULATOR_SYSTEMD_SERVICE=devstack@redfish-emulator.service
IRONIC_REDFISH_EMULATOR_CONFIG=$IRONIC_CONF_DIR/redfish/emulator.conf
IRONIC_REDFISH_EMULATOR_FEATURE_SET=full

function ironic_phase {
    case "$1 ${2:-}" in
    "stack install")  # install_redfish: the gunicorn unit
        local cmd=$STACK_VENV/bin/gunicorn
        cmd+=" sushy_tools.emulator.main:app"
        cmd+=" --bind $HOST_IP:$IRONIC_REDFISH_EMULATOR_PORT"
        cmd+=" --env SUSHY_EMULATOR_CONFIG=$IRONIC_REDFISH_EMULATOR_CONFIG"
        cmd+=" --workers 2 --threads 2 --timeout 90"
        cmd+=" --access-logfile=- --error-logfile=-"
        write_user_unit_file $IRONIC_REDFISH_EMULATOR_SYSTEMD_SERVICE \
            "$cmd" "" $STACK_USER
        enable_service $IRONIC_REDFISH_EMULATOR_SYSTEMD_SERVICE ;;
    "stack post-config")  # configure_redfish, start_redfish
        mkdir -p $(dirname $IRONIC_REDFISH_EMULATOR_CONFIG)
        cat > $IRONIC_REDFISH_EMULATOR_CONFIG <<CONF
SUSHY_EMULATOR_BOOT_LOADER_MAP = {
    'UEFI': {'x86_64': '/usr/share/OVMF/OVMF_CODE.fd'},
    'Legacy': {'x86_64': None}
}
SUSHY_EMULATOR_FEATURE_SET = "$IRONIC_REDFISH_EMULATOR_FEATURE_SET"
CONF
        start_service $IRONIC_REDFISH_EMULATOR_SYSTEMD_SERVICE ;;
    "stack extra")  # enroll_nodes: what it reads of each line
        local total=0 line info mac
        touch $IRONIC_VM_MACS_CSV_FILE
        : > $STACK_ROOT/enrolled
        while read line; do
            info=$(echo $line | awk '{print $1}')
            local node="node-$total macs="
            for mac in ${info//;/ }; do
                node+="$(echo $mac | awk -F ',' '{print $1}'),"
            done
            echo "$node redfish_address=http://$HOST_IP:$IRONIC_REDFISH_EMULATOR_PORT redfish_system_id=/redfish/v1/Systems/node-$total" \
                >> $STACK_ROOT/enrolled
            total=$((total + 1))
        done < $IRONIC_VM_MACS_CSV_FILE ;;
    "unstack ")
        stop_service $IRONIC_REDFISH_EMULATOR_SYSTEMD_SERVICE ;;
    esac
}

# --- stack.sh / unstack.sh / clean.sh --------------------------------------
source $DEST/sushy-kubevirt/devstack/settings

case $MODE in
stack) PHASES="pre-install install post-config extra test-config" ;;
*) PHASES="" ;;
esac

if [[ -n "$PHASES" ]]; then
    for phase in $PHASES; do
        ironic_phase stack $phase
        source $DEST/sushy-kubevirt/devstack/plugin.sh stack $phase
    done
else
    ironic_phase $MODE
    source $DEST/sushy-kubevirt/devstack/plugin.sh $MODE
fi
echo "$MODE done"
