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

# plugin.sh - devstack plugin: Ironic's Redfish emulator on KubeVirt
# (doc/source/devstack.rst). Phases, after ironic's of the same name:
#   stack pre-install   check the settings
#   stack install       install sushy-kubevirt into sushy-tools' venv
#   stack post-config   [simulator], node VMs + enrollment file, emulator
#                       config, restart devstack@redfish-emulator
#   unstack / clean     stop the simulator / delete what was created

if is_service_enabled sushy-kubevirt; then
    source $SUSHY_KUBEVIRT_DIR/devstack/lib/sushy-kubevirt

    if [[ "$1" == "stack" && "$2" == "pre-install" ]]; then
        sushy_kubevirt_check_settings

    elif [[ "$1" == "stack" && "$2" == "install" ]]; then
        echo_summary "Installing sushy-kubevirt"
        install_sushy_kubevirt

    elif [[ "$1" == "stack" && "$2" == "post-config" ]]; then
        if [[ "$SUSHY_KUBEVIRT_SIMULATOR" == "True" ]]; then
            echo_summary "Starting the sushy-kubevirt simulator"
            start_sushy_kubevirt_simulator
        fi
        if [[ "$SUSHY_KUBEVIRT_CREATE_VMS" == "True" ]]; then
            echo_summary "Creating the node VirtualMachines"
            mkdir -p $(dirname $IRONIC_VM_MACS_CSV_FILE)
            sushy_kubevirt_nodes create \
                || die $LINENO "could not create the node VirtualMachines"
        fi
        echo_summary "Configuring the Redfish emulator for KubeVirt"
        configure_sushy_kubevirt
        start_sushy_kubevirt
    fi

    if [[ "$1" == "unstack" ]]; then
        stop_sushy_kubevirt
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_sushy_kubevirt
    fi
fi
