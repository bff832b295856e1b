# Cython declarations for clock.py (compiled where the package is built with Cython; clock.py runs as is otherwise).
cimport cython

cdef double _ROUND

cdef class Clock:
    cdef public object env, run, timeout
    cdef public double quantum
    cdef public dict pending

    @cython.locals(when=double, quantum=double, items=list)
    cpdef call_later(self, double now, double delay, fn, arg)
