/* A column of 64-bit integers as a JSON list, for the manifest's event columns.
 *
 * A sealed batch of tracebacks lists hundreds of thousands of events, each with its first line
 * and its line count. Made into Python ints to be encoded, the first lines (most above 256, so
 * none is a cached small int) cost about 35 ns each, most of the manifest's time in a seal;
 * written straight from the array's memory they cost a few. Optional, like the line tests:
 * pipeline_core.staging_contract._events encodes the same bytes from Python ints without it.
 *
 *   json_int_list(column) -> bytes          b"[1,2,3]" for a C-contiguous array of int64
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Writes value in decimal at out; returns the bytes written (at most 20). */
static Py_ssize_t write_decimal(int64_t value, char *out) {
    char digits[20];
    Py_ssize_t n = 0, written = 0;
    uint64_t magnitude = (uint64_t)value;
    if (value < 0) {
        out[written++] = '-';
        magnitude = (uint64_t)0 - magnitude;
    }
    do {
        digits[n++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    while (n) out[written++] = digits[--n];
    return written;
}

static PyObject *json_int_list(PyObject *self, PyObject *args) {
    Py_buffer view;
    if (!PyArg_ParseTuple(args, "y*", &view)) return NULL;
    if (view.len % 8) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_ValueError, "a column of 64-bit integers is a multiple of 8 bytes");
        return NULL;
    }
    Py_ssize_t count = view.len / 8;
    char *text = malloc((size_t)count * 21 + 2);
    if (text == NULL) {
        PyBuffer_Release(&view);
        return PyErr_NoMemory();
    }
    Py_ssize_t size = 0;
    Py_BEGIN_ALLOW_THREADS
    const char *values = view.buf;
    text[size++] = '[';
    for (Py_ssize_t i = 0; i < count; i++) {
        int64_t value;
        memcpy(&value, values + 8 * i, 8);
        if (i) text[size++] = ',';
        size += write_decimal(value, text + size);
    }
    text[size++] = ']';
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&view);
    PyObject *result = PyBytes_FromStringAndSize(text, size);
    free(text);
    return result;
}

static PyMethodDef methods[] = {
    {"json_int_list", json_int_list, METH_VARARGS,
     "json_int_list(column) -> bytes: a C-contiguous int64 column as a JSON list."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_int_lists",
    "A column of 64-bit integers as a JSON list.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__int_lists(void) { return PyModule_Create(&module); }
