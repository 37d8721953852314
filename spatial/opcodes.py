"""The tape's opcodes (:class:`.tape.Op`) as plain ints: compile-time constants in the numba
interpreters on the CPU and, through their device twins, on the GPU."""

from .tape import Op

_VAR, _CONST, _ADD, _SUB, _MUL, _DIV, _NEG = (
    int(Op.VAR),
    int(Op.CONST),
    int(Op.ADD),
    int(Op.SUB),
    int(Op.MUL),
    int(Op.DIV),
    int(Op.NEG),
)
_POWI, _SQRT, _EXP, _LOG, _TANH, _SIN, _COS = (
    int(Op.POWI),
    int(Op.SQRT),
    int(Op.EXP),
    int(Op.LOG),
    int(Op.TANH),
    int(Op.SIN),
    int(Op.COS),
)
_TAN, _ABS, _ATAN2, _MIN, _MAX, _SIGMOID, _RELU = (
    int(Op.TAN),
    int(Op.ABS),
    int(Op.ATAN2),
    int(Op.MIN),
    int(Op.MAX),
    int(Op.SIGMOID),
    int(Op.RELU),
)
