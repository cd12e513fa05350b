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

"""The Redfish privileges, and the roles that hold them (DSP0266 13.2).

Each route of :data:`sushy_kubevirt.plugin.EXTENSION_POINTS` and of
:data:`sushy_kubevirt.redfish.base.ROUTES` maps every method it serves
to one of these, as DMTF's Redfish privilege registry
(``Redfish_1.5.0_PrivilegeRegistry``) does for the standard resources.
:data:`ROLES` are the predefined roles with the privileges DSP0266 gives
them.
"""

#: Served without authentication (the service root, the login).
NO_AUTH = 'NoAuth'
LOGIN = 'Login'
CONFIGURE_COMPONENTS = 'ConfigureComponents'
CONFIGURE_MANAGER = 'ConfigureManager'
CONFIGURE_USERS = 'ConfigureUsers'
CONFIGURE_SELF = 'ConfigureSelf'
ALL = (NO_AUTH, LOGIN, CONFIGURE_COMPONENTS, CONFIGURE_MANAGER,
       CONFIGURE_USERS, CONFIGURE_SELF)

#: Read-only resources.
READ = {'GET': LOGIN}
#: A component's state, read and changed (Systems, Chassis, media, BIOS).
COMPONENT = {'GET': LOGIN, 'PATCH': CONFIGURE_COMPONENTS}
#: An action on a component (``POST .../Actions/...``).
COMPONENT_ACTION = {'POST': CONFIGURE_COMPONENTS}

#: The predefined roles (``Role.v1_3_1``, ``RoleId``) -> their privileges.
ROLES = {
    'Administrator': (LOGIN, CONFIGURE_MANAGER, CONFIGURE_USERS,
                      CONFIGURE_COMPONENTS, CONFIGURE_SELF),
    'Operator': (LOGIN, CONFIGURE_COMPONENTS, CONFIGURE_SELF),
    'ReadOnly': (LOGIN, CONFIGURE_SELF),
}
ADMINISTRATOR = 'Administrator'
