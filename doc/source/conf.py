"""Sphinx configuration for sushy-kubevirt."""

project = 'sushy-kubevirt'
copyright = '2026, sushy-kubevirt developers'
extensions = []
master_doc = 'index'
exclude_patterns = ['_build']
html_theme = 'alabaster'
pygments_style = 'sphinx'
