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

"""Sphinx configuration for the sushy-kubevirt release notes."""

from docutils import nodes

project = 'sushy-kubevirt Release Notes'
copyright = '2026, sushy-kubevirt developers'
extensions = ['reno.sphinxext']
master_doc = 'index'
exclude_patterns = ['_build']
html_theme = 'alabaster'

#: The title of the notes no release tag includes yet. reno titles them
#: with ``git describe`` (``0.1.0-3``, retitled by ``releasenotes/
#: config.yaml``'s ``unreleased_version_title``), or ``0.0.0`` before the
#: first tag, which :func:`_retitle` renames.
UNRELEASED = 'Unreleased'
_NO_TAG_YET = '0.0.0'


def _retitle(app, doctree):
    for title in list(doctree.findall(nodes.title)):
        if title.astext() == _NO_TAG_YET:
            title.replace_self(nodes.title('', UNRELEASED))


def setup(app):
    app.connect('doctree-read', _retitle)
