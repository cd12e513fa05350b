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

"""Sphinx configuration for sushy-kubevirt."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(
    __file__)), '_ext'))

project = 'sushy-kubevirt'
copyright = '2026, sushy-kubevirt developers'
extensions = ['bench_history', 'sequence']
#: The benchmark records the bench-history-table directive reads.
bench_history = '../../benchmarks/history.jsonl'
master_doc = 'index'
exclude_patterns = ['_build']
html_theme = 'alabaster'
pygments_style = 'sphinx'
