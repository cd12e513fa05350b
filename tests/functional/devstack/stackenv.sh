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
# for devstack/plugin.sh, sourced in one shell. devstack's functions are
# modelled below on functions-common: enable_service and disable_service
# only edit ENABLED_SERVICES; run_process writes a devstack@NAME.service
# unit file and calls "systemctl enable" and "systemctl start";
# stop_process calls "systemctl stop" and "disable" on an enabled unit;
# start_service, stop_service and restart_service call systemctl on the
# unit named. systemctl is the stand-in of ./bin (first on PATH, where
# devstack's start_service calls /bin/systemctl), which records its calls
# and runs a unit's ExecStart as a background process, on 127.0.0.1 only.
#
# Input (environment): STACK_ROOT (a scratch directory), PLUGIN_REPO,
# STACK_VENV (the Python environment with sushy-tools), HOST_IP,
# IRONIC_REDFISH_EMULATOR_PORT and the local.conf variables under test.

set -o errexit

MODE=$1

# --- devstack's functions, modelled ----------------------------------------
export STACK_ROOT
export SYSTEMD_DIR=$STACK_ROOT/systemd
export PATH=$(cd $(dirname ${BASH_SOURCE[0]}) && pwd)/bin:$PATH
CALLS=$STACK_ROOT/calls.log
mkdir -p $STACK_ROOT/run $SYSTEMD_DIR
SYSTEMCTL="sudo systemctl"
ENABLED_SERVICES=${ENABLED_SERVICES:-ir-api,ir-cond}
DISABLED_SERVICES=""

function _call { echo "$*" >> $CALLS; }
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
    local name
    for name in "$@"; do
        if [[ ,$DISABLED_SERVICES, == *,$name,* ]]; then
            warn $LINENO "Attempt to enable_service $name when it has been disabled"
            continue
        fi
        is_service_enabled $name || ENABLED_SERVICES+=,$name
    done
}
function disable_service {
    local name
    for name in "$@"; do
        DISABLED_SERVICES+=,$name
        ENABLED_SERVICES=$(echo ",$ENABLED_SERVICES," |
            sed "s/,$name,/,/;s/^,//;s/,$//")
    done
}
function setup_develop { _call "setup_develop $* VIRTUAL_ENV=${VIRTUAL_ENV:-}"; }
function pip_install { _call "pip_install $*"; }
function write_user_unit_file {
    local service=$1 command="$2" group=$3 user=$4
    {
        echo "[Unit]"
        echo "Description = Devstack $service"
        echo "[Service]"
        echo "Environment = \"PATH=$PATH\""
        echo "User = $user"
        echo "ExecStart = $command"
        echo "KillMode = process"
        echo "TimeoutStopSec = 300"
        [[ -n "$group" ]] && echo "Group = $group"
        echo "[Install]"
        echo "WantedBy = multi-user.target"
    } > $SYSTEMD_DIR/$service
    $SYSTEMCTL daemon-reload
}
function run_process {
    local name=$1 command="$2" group=$3 user=${4:-$STACK_USER}
    is_service_enabled $name || return 0
    [[ "$command" =~ sudo ]] && die $LINENO "run_process with sudo"
    [[ "$command" =~ ^/ ]] || die $LINENO "not an absolute path: $command"
    write_user_unit_file devstack@$name.service "$command" "$group" "$user"
    $SYSTEMCTL enable devstack@$name.service
    $SYSTEMCTL start devstack@$name.service
}
function stop_process {
    local name=$1
    is_service_enabled $name || return 0
    if $SYSTEMCTL is-enabled devstack@$name.service; then
        $SYSTEMCTL stop devstack@$name.service
        $SYSTEMCTL disable devstack@$name.service
    fi
}
function start_service { sudo systemctl start $1; }
function stop_service { sudo systemctl stop $1; }
function restart_service { sudo systemctl restart $1; }
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

function run_mode {
    local mode=$1 phase
    case $mode in
    stack)
        for phase in pre-install install post-config extra test-config; do
            ironic_phase stack $phase
            source $DEST/sushy-kubevirt/devstack/plugin.sh stack $phase
        done ;;
    *)
        ironic_phase $mode
        source $DEST/sushy-kubevirt/devstack/plugin.sh $mode ;;
    esac
}

if [[ $MODE == clean ]]; then
    # clean.sh: unstack.sh first, the clean phase, then the unit files.
    run_mode unstack
    run_mode clean
    find $SYSTEMD_DIR -type f -name '*devstack@*service' -delete
    $SYSTEMCTL daemon-reload
else
    run_mode $MODE
fi
echo "ENABLED_SERVICES=$ENABLED_SERVICES"
echo "$MODE done"
