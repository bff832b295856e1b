# Cython declarations for weighted_psqueue.py (compiled where the package is built with Cython; the .py runs as
# is otherwise). Same float operations in the same order: only the Python objects around them go.
cimport cython
from megasim.engine.psqueue cimport PSQueue

cdef class WeightedPSQueue(PSQueue):
    cdef public const double[:] weight
    cdef public double total

    @cython.locals(v=double, w=double)
    cpdef submit(self, double now, double amount, Py_ssize_t job)

    cpdef release(self, double now, Py_ssize_t job=*)

    @cython.locals(v=double, limit=double, heap=list, finished=list, pending="unsigned char[:]", left=int,
                   job=Py_ssize_t)
    cpdef _fire(self, double now, Py_ssize_t token)

    cpdef _rerate(self, double now)
