"""Landing sealed checkpoints into the lake: the spark-submit spec of the landing job."""

from pipeline_core.landing._spec import (
    LANDING_APPLICATION,
    METASTORE_URL_ENV,
    LandingInput,
    SparkJobSpec,
    checkpoint_location,
    landing_job_spec,
    spark_jobs_archive,
    spark_submit_binary,
)

__all__ = [
    "LANDING_APPLICATION",
    "METASTORE_URL_ENV",
    "LandingInput",
    "SparkJobSpec",
    "checkpoint_location",
    "landing_job_spec",
    "spark_jobs_archive",
    "spark_submit_binary",
]
