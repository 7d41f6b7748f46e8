"""A hint to the processor that an array element will be read soon (`llvm.prefetch`).

The robot-time search is bound by random reads of tables far larger than the caches. A read
that waits on nothing else but is needed only later can be started with a prefetch: unlike a
load, it does not hold the instructions after it, so the search can go on with other work
(another direction's step) while the read is under way. A prefetch never faults and changes
no result.
"""

from __future__ import annotations

from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_READ = ir.Constant(ir.IntType(32), 0)
_KEEP = ir.Constant(ir.IntType(32), 3)  # keep it in every cache level
_DATA = ir.Constant(ir.IntType(32), 1)


def _emit(context, builder, arrty, array, indices):
    ary = context.make_array(arrty)(context, builder, array)
    ptr = cgutils.get_item_pointer(context, builder, arrty, ary, indices, wraparound=False,
                                   boundscheck=False)
    byte_ptr = builder.bitcast(ptr, ir.IntType(8).as_pointer())
    fnty = ir.FunctionType(ir.VoidType(), [byte_ptr.type, ir.IntType(32), ir.IntType(32),
                                           ir.IntType(32)])
    fn = cgutils.get_or_insert_function(builder.module, fnty, "llvm.prefetch.p0")
    builder.call(fn, [byte_ptr, _READ, _KEEP, _DATA])
    return context.get_dummy_value()


@intrinsic
def prefetch(typingctx, array, index):
    """Start reading ``array[index]`` (a 1-D array) into the caches."""
    if not isinstance(array, types.Array) or array.ndim != 1:
        return None
    sig = types.void(array, types.intp)

    def codegen(context, builder, signature, args):
        return _emit(context, builder, signature.args[0], args[0], [args[1]])

    return sig, codegen


@intrinsic
def prefetch2(typingctx, array, row, column):
    """Start reading ``array[row, column]`` (a 2-D array) into the caches."""
    if not isinstance(array, types.Array) or array.ndim != 2:
        return None
    sig = types.void(array, types.intp, types.intp)

    def codegen(context, builder, signature, args):
        return _emit(context, builder, signature.args[0], args[0], [args[1], args[2]])

    return sig, codegen
