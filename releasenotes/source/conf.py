"""Sphinx configuration for the sushy-kubevirt release notes."""

project = 'sushy-kubevirt Release Notes'
copyright = '2026, sushy-kubevirt developers'
extensions = ['reno.sphinxext']
master_doc = 'index'
exclude_patterns = ['_build']
html_theme = 'alabaster'
