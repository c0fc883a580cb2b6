"""Landing a sealed checkpoint into the lake: the spark-submit spec and the job's summary."""

from pipeline_core.landing._spec import (
    LANDING_APPLICATION,
    SparkJobSpec,
    landing_job_spec,
    landing_summary_path,
    read_landing_summary,
    spark_jobs_archive,
)

__all__ = [
    "LANDING_APPLICATION",
    "SparkJobSpec",
    "landing_job_spec",
    "landing_summary_path",
    "read_landing_summary",
    "spark_jobs_archive",
]
