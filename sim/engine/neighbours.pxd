# Cython declarations for neighbours.py (compiled where the package is built with Cython; the .py runs as is
# otherwise).
cimport cython

cdef class GemmNeighbours:
    cdef public int[:] working
    cdef public double[:] busy, since

    cpdef _advance(self, double now, Py_ssize_t sm)
    cpdef enter(self, double now, Py_ssize_t sm)
    cpdef leave(self, double now, Py_ssize_t sm)
    cpdef double busy_until(self, double now, Py_ssize_t sm)
