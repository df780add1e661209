"""Sphinx configuration of the minisched documentation (``tox -e docs``)."""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, '_exts'))

project = 'minisched'
copyright = 'minisched contributors'
author = 'minisched contributors'

extensions = [
    'oslo_config.sphinxext',        # .. show-options:: from the registered options
    'oslo_config.sphinxconfiggen',  # the sample config, generated at each build
    'minisched_cli',                # .. minisched-cli:: from the commands' own parsers
]

# oslo_config.sphinxconfiggen: write _static/minisched.conf.sample from the generator's
# namespaces (the same file tox -e genconfig reads).
config_generator_config_file = [
    (os.path.join(ROOT, 'etc', 'minisched', 'minisched-config-generator.conf'),
     '_static/minisched'),
]

master_doc = 'index'
exclude_patterns = ['_build']
# Code blocks without a language are shown as text, not guessed as Python.
highlight_language = 'none'
html_theme = 'alabaster'
html_static_path = ['_static']
html_title = 'minisched documentation'

# -- man pages: sphinx-build -b man ------------------------------------------------------
man_pages = [
    ('cli/minisched-manage', 'minisched-manage',
     'control and query a minisched deployment', [author], 1),
    ('cli/minisched-cluster', 'minisched-cluster',
     'a working local minisched cluster in one command', [author], 1),
    ('cli/minisched-scheduler', 'minisched-scheduler',
     'the minisched scheduler service', [author], 1),
    ('cli/minisched-conductor', 'minisched-conductor',
     'the minisched conductor service', [author], 1),
    ('cli/minisched-compute', 'minisched-compute',
     'the minisched compute service', [author], 1),
]
man_show_urls = False
