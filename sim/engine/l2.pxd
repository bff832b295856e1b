# Cython declarations for l2.py (compiled where the package is built with Cython; l2.py runs as is otherwise).
cimport cython
from libc.stdint cimport int8_t, int32_t, int64_t

ctypedef const int8_t ci8
ctypedef const int32_t ci32
ctypedef const int64_t ci64

cdef class L2Model:
    cdef public object graph
    cdef public double capacity, clock
    cdef public double[:] last
    cdef public int64_t[:] filled
    cdef public const int8_t[:] kind
    cdef public const int64_t[:] rptr, rbytes, wptr, wbytes
    cdef public const int32_t[:] rreg, wreg
    cdef public list miss_bytes

    @cython.locals(last=double[:], filled=int64_t[:], cap=double, rreg=ci32[:],
                   rbytes=ci64[:], kind=ci8[:], miss_bytes=list, clock=double, miss=int64_t,
                   i=Py_ssize_t, r=int32_t, b=int64_t, have=int64_t)
    cpdef int64_t read(self, Py_ssize_t task) except? -1

    @cython.locals(last=double[:], filled=int64_t[:], cap=double, wreg=ci32[:],
                   wbytes=ci64[:], clock=double, i=Py_ssize_t, r=int32_t, b=int64_t)
    cpdef write(self, Py_ssize_t task)
