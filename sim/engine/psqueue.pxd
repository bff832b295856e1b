# Cython declarations for psqueue.py (compiled where the package is built with Cython; psqueue.py runs as is
# otherwise). Same float operations in the same order: only the Python objects around them go.
cimport cython

cdef double _EPS, inf

cdef class PSQueue:
    cdef public object call_later, done, fire
    cdef public double capacity, job_cap, v, t, r, armed_at, half
    cdef public list heap
    cdef public Py_ssize_t seq, token, held
    cdef public unsigned char[:] pending
    cdef public bint sticky

    @cython.locals(v=double, seq=Py_ssize_t, share=double, cap=double, r=double, head=tuple, when=double,
                   token=Py_ssize_t, heap=list)
    cpdef submit(self, double now, double amount, Py_ssize_t job)

    @cython.locals(v=double, r=double, limit=double, share=double, cap=double, when=double, heap=list,
                   finished=list, pending="unsigned char[:]", left=int, j=Py_ssize_t)
    cpdef _fire(self, double now, Py_ssize_t token)

    cpdef release(self, double now, Py_ssize_t job=*)

    @cython.locals(when=double, token=Py_ssize_t)
    cpdef _arm(self, double now)
