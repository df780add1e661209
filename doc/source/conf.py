"""Sphinx configuration of the minisched documentation (``tox -e docs``)."""
import os
import sys

# The build reads minisched's modules (the CLI reference, the options): run it on native
# threads, as the services do, so that no library it imports tries eventlet (whose import
# prints a deprecation notice on every build).
from minisched import monkey_patch  # noqa: E402
monkey_patch.patch(backend='threading')

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, '_exts'))

project = 'minisched'
copyright = 'minisched contributors'
author = 'minisched contributors'

extensions = [
    'openstackdocstheme',           # the theme OpenStack projects publish with
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
html_theme = 'openstackdocs'
# openstackdocstheme: the project's name as given here (not read from packaging metadata),
# no bug-report links (minisched has no Launchpad or StoryBoard project), no PDF link.
openstackdocs_auto_name = False
openstackdocs_pdf_link = False
openstackdocs_use_storyboard = False
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


def _man_reference(translator, node):
    """A link in a man page: its text in italics, then the address of an external one.

    docutils 0.22's man writer binds reference handlers of its own to each translator,
    hiding Sphinx's; for a link to another page they print an empty ``<>`` after the text.
    """
    from docutils import nodes
    uri = node.get('refuri', '')
    translator.body.append(translator.defs['emphasis'][0])
    translator.visit_Text(node)
    translator.body.append(translator.defs['emphasis'][1])
    if uri.startswith(('http:', 'https:')) and node.astext() != uri:
        translator.body.append(' <%s>' % uri)
    raise nodes.SkipNode


def setup(app):
    from sphinx.writers.manpage import ManualPageTranslator

    class Translator(ManualPageTranslator):
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.visit_reference = lambda node: _man_reference(self, node)

    app.set_translator('man', Translator)
