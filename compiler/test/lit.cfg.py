# lit configuration for Kiln's compiler tests (.kir files checked with
# FileCheck). Run through ctest (`lit` test) or directly:
#   /usr/bin/python3 /usr/lib/llvm-15/build/utils/lit/lit.py -sv compiler/test \
#       --param kiln_tools_dir=<build>/compiler/tools
# (%kiln-dump, the module disassembler, defaults to <build>/tools/kiln-dump;
# --param kiln_dump=PATH overrides it.)
import os
import tempfile

import lit.formats

config.name = 'kiln'
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = ['.kir']
config.test_source_root = os.path.dirname(__file__)

tools_dir = lit_config.params.get('kiln_tools_dir')
if not tools_dir:
    lit_config.fatal('pass --param kiln_tools_dir=<dir holding kiln-opt>')
tools_dir = os.path.abspath(tools_dir)
# Output/ goes to the build tree, never into the sources.
config.test_exec_root = lit_config.params.get(
    'kiln_exec_root', os.path.join(os.path.dirname(tools_dir), 'test'))

llvm_bin = '/usr/lib/llvm-15/bin'
config.environment['PATH'] = os.pathsep.join(
    [tools_dir, llvm_bin, config.environment.get('PATH', '')])

# Longest names first so %kiln-opt is not cut by a shorter substitution.
for tool in ['kiln-compile', 'kiln-opt']:
    config.substitutions.append(('%' + tool, os.path.join(tools_dir, tool)))
config.substitutions.append(('%kiln-dump', lit_config.params.get(
    'kiln_dump', os.path.join(os.path.dirname(os.path.dirname(tools_dir)), 'tools', 'kiln-dump'))))
